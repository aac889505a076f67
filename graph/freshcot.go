package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// This file: the second-order pass writes, rather than adds, the first
// contribution to a cotangent tangent, so that it need not zero them all
// first.
//
// SecondOrder runs once per column of a dense Hessian; zeroing every
// cotangent-tangent buffer before each run (seed) was 6-10% of it on the
// paper's RNN. A region of a buffer is fresh at a step when no output
// seed and no step run before it (in reverse order) touches it; a buffer
// all of whose elements lie in fresh regions is not zeroed by seed.
// Instead, each fresh region is either written by its kernel's set form
// (kernels implementing freshSetter: 0 + v, bit for bit what adding to
// a zero gives, without reading the buffer) or zeroed just before its
// step, while it is about to be in cache anyway.

// freshSetter is a kernel whose vjpTangent, when exec.freshIn(i) holds,
// writes its contribution to dgin[i] in place of adding it: all of
// dgin[i], reading none of it, when input i has n elements and the
// result nout.
type freshSetter interface {
	setsFresh(i, n, nout int) bool
}

// freshPlan is a State's plan for the second-order pass: per step, the
// inputs whose regions are fresh and set by the kernel (set) or zeroed
// by the executor before the step (zero), as bit masks over the step's
// inputs; and per slot, whether seed zeroes it (only owners are read).
type freshPlan struct {
	set, zero []uint64
	keep      []bool // owners seed leaves alone
}

// freshIn reports whether the current step's kernel is to set, rather
// than add to, the cotangent tangent of its input i.
func (ex *exec) freshIn(i int) bool { return ex != nil && ex.fresh&(1<<i) != 0 }

// region is the place of a slot's data in its owner's buffer.
type region struct{ owner, off, n int }

// regionOf returns the owner, offset and length of slot j's buffer, if
// it is a step result, a part of one or a view of either.
func (p *Program) regionOf(j int, owner []bool) (region, bool) {
	sl := p.slots[j]
	r := region{owner: j, n: numel(sl.shape)}
	switch sl.kind {
	case slotStep:
	case slotPart:
		r.owner, r.off = sl.index, sl.off
	case slotView:
		r.owner, r.off = sl.index, sl.off
		if rs := p.slots[sl.index]; rs.kind == slotPart {
			r.owner, r.off = rs.index, rs.off+sl.off
		} else if rs.kind != slotStep {
			return r, false
		}
	default:
		return r, false
	}
	return r, owner[r.owner]
}

// freshPlan works out the plan for the active slots act.
func (p *Program) freshPlan(act []bool) *freshPlan {
	owner := make([]bool, len(p.slots))
	for _, i := range p.owners {
		owner[i] = act[i]
	}
	touched := map[int][][2]int{}
	overlaps := func(r region) bool {
		for _, iv := range touched[r.owner] {
			if r.off < iv[1] && iv[0] < r.off+r.n {
				return true
			}
		}
		return false
	}
	touch := func(r region) { touched[r.owner] = append(touched[r.owner], [2]int{r.off, r.off + r.n}) }
	for _, o := range p.outputs {
		if o.isStatic() || !act[o.slot] {
			continue
		}
		if r, ok := p.regionOf(o.slot, owner); ok {
			touch(r)
		}
	}
	type fresh struct {
		step, in int
		r        region
	}
	var cand []fresh
	covered := make([]int, len(p.slots))
	var (
		rs []region
		ks []int
	)
	for si := len(p.steps) - 1; si >= 0; si-- {
		st := p.steps[si]
		if !act[st.out] || len(st.in) > 64 {
			continue
		}
		rs, ks = rs[:0], ks[:0]
		for k, j := range st.in {
			if !act[j] {
				continue
			}
			if r, ok := p.regionOf(j, owner); ok {
				rs, ks = append(rs, r), append(ks, k)
			}
		}
		for a, r := range rs {
			dup := false
			for b, q := range rs {
				dup = dup || (a != b && q.owner == r.owner && r.off < q.off+q.n && q.off < r.off+r.n)
			}
			if !dup && !overlaps(r) {
				cand = append(cand, fresh{si, ks[a], r})
				covered[r.owner] += r.n
			}
		}
		for _, r := range rs {
			touch(r)
		}
	}
	fp := &freshPlan{set: make([]uint64, len(p.steps)), zero: make([]uint64, len(p.steps)), keep: make([]bool, len(p.slots))}
	for i := range p.slots {
		fp.keep[i] = owner[i] && covered[i] == numel(p.slots[i].shape)
	}
	for _, c := range cand {
		if !fp.keep[c.r.owner] {
			continue // zeroed by seed
		}
		st := p.steps[c.step]
		if fs, ok := st.k.(freshSetter); ok && fs.setsFresh(c.in, c.r.n, numel(p.slots[st.out].shape)) {
			fp.set[c.step] |= 1 << c.in
		} else {
			fp.zero[c.step] |= 1 << c.in
		}
	}
	return fp
}

// setSum sets dst to 0 + src when the current step's input i is fresh,
// and adds src to it otherwise.
func (ex *exec) setSum(i int, dst, src []float64) {
	if ex.freshIn(i) {
		f64.SetSum(dst, src)
		return
	}
	f64.AddTo(dst, src)
}

// setsFresh: vjpTangent sets the input's cotangent tangent (the tanh
// form wholly, the others after zeroing it).
func (k *unaryK) setsFresh(i, n, nout int) bool { return i == 0 && n == nout }

// setsFresh: the addend's cotangent tangent is the result's, set when the
// addend has the result's size and is not broadcast; A's is set by its
// first product (Gemm with beta 0) when there is one product covering
// all of A.
func (k *matmulK) setsFresh(i, n, nout int) bool {
	switch i {
	case 0:
		// Not one row or column: see jvpSetsFirst.
		return len(k.ia) == 1 && k.ia[0] == 0 && n == k.m*k.k && k.m > 1 && k.k > 1 && k.n > 0
	case 2:
		return k.add && !k.addRow && k.addIdx == nil && n == nout
	}
	return false
}
