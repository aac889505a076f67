package graph

// This file: tangents known to be zero.
//
// Along a unit direction of the parameters (a column of a dense Hessian)
// most parameter tangents are zero, and so is every step result that
// depends only on them: the input projection of an RNN along a recurrent
// weight, the whole recurrence along an output weight. Tangent marks such
// results zero instead of computing them, and the kernels that read them
// get nil (which they take as zero) or, for kernels that do not take nil
// in every input, the buffer cleared on first use.

// zeroTangents tracks which tangent buffers of a State hold zero without
// having been written in the current tangent pass.
type zeroTangents struct {
	flag []bool // by slot: a parameter, step result or part known zero
	// parts lists, by container slot, the parts of each container that
	// its active parts cover whole; only those parts are ever flagged.
	parts [][]int
}

// nilTangents reports whether kernel k takes a nil tangent in any input
// as zero, in jvp and vjpTangent alike.
func nilTangents(k kernel) bool {
	switch k.(type) {
	case *matmulK, *unaryK, *binK:
		return true
	}
	return false
}

// startZero flags the parameter slots whose part of the direction v is
// all zero, and clears every other flag.
func (s *State) startZero(v []float64) {
	p := s.p
	z := &s.d.zero
	if z.flag == nil {
		z.flag = make([]bool, len(p.slots))
		z.parts = make([][]int, len(p.slots))
		covered := map[int]int{}
		for i, sl := range p.slots {
			if sl.kind == slotPart && p.live[i] && s.d.active[i] {
				z.parts[sl.index] = append(z.parts[sl.index], i)
				covered[sl.index] += numel(sl.shape)
			}
		}
		for c, ps := range z.parts {
			if ps != nil && covered[c] != numel(p.slots[c].shape) {
				z.parts[c] = nil
			}
		}
	}
	clear(z.flag)
	for i, sl := range p.slots {
		if sl.kind != slotParam || !s.d.active[i] {
			continue
		}
		pr := p.g.params[sl.index]
		zero := true
		for _, x := range v[pr.Offset : pr.Offset+pr.Size] {
			if x != 0 {
				zero = false
				break
			}
		}
		z.flag[i] = zero
	}
}

// rootOf is the slot whose buffer slot j shares: the root of a view.
func (s *State) rootOf(j int) int {
	if sl := s.p.slots[j]; sl.kind == slotView {
		return sl.index
	}
	return j
}

// tanZero reports whether the tangent of slot j is known zero.
func (s *State) tanZero(j int) bool {
	z := &s.d.zero
	r := s.rootOf(j)
	if ps := z.parts[r]; ps != nil {
		for _, q := range ps {
			if !z.flag[q] {
				return false
			}
		}
		return true
	}
	return z.flag[r]
}

// setZero records that step result out is zero: a flag, or for a part of
// a container that is not covered by flagged parts, zeros written.
func (s *State) setZero(out int) {
	if sl := s.p.slots[out]; sl.kind == slotPart {
		if s.d.zero.parts[sl.index] == nil {
			clear(s.d.tan[out].F)
			return
		}
	}
	s.d.zero.flag[out] = true
}

// inputsZero reports whether every input tangent of st is nil or known
// zero.
func (s *State) inputsZero(st step) bool {
	for _, j := range st.in {
		if s.d.tan[j] != nil && !s.tanZero(j) {
			return false
		}
	}
	return true
}

// materialize writes zeros into the buffer of slot j where it is known
// zero and clears the flags: a parameter's direction is zero already; a
// container gets its zero parts cleared.
func (s *State) materialize(j int) {
	z := &s.d.zero
	r := s.rootOf(j)
	if s.p.slots[r].kind == slotParam {
		return
	}
	if ps := z.parts[r]; ps != nil {
		for _, q := range ps {
			if z.flag[q] {
				clear(s.d.tan[q].F)
				z.flag[q] = false
			}
		}
		return
	}
	if z.flag[r] {
		clear(s.d.tan[r].F)
		z.flag[r] = false
	}
}

// tangentIn is the tangent that step input j gives a kernel that takes
// nil as zero (nilOK) or not.
func (s *State) tangentIn(j int, nilOK bool) *Tensor {
	t := s.d.tan[j]
	if t == nil {
		return nil
	}
	if nilOK && s.tanZero(j) {
		return nil
	}
	// A container some of whose parts are zero gets those cleared.
	s.materialize(j)
	return t
}
