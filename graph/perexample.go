package graph

import (
	"fmt"
	"slices"

	"github.com/rnnaudit/rnnaudit/internal/asm/f64"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Per-example gradients from one batched pass.
//
// A batched program evaluates many examples (sequences) at once. When no
// operation mixes examples, every element of a value computed from the
// data belongs to one example, and the batched backward pass already holds
// each example's own cotangents there: the examples' losses meet only in
// the values computed from the parameters alone. Program.PerExample finds that
// structure once per program. BackwardPerExample then runs one backward
// pass, and where a parameter-only value meets the data (the weights of a
// matrix product, a broadcast bias) it splits the cotangent by example
// instead of summing it: for a product, one small matrix product per
// example over the rows that example owns, written straight into the
// example's gradient when the weight is a plain or transposed view of the
// parameter vector; for the rest, per-example accumulators mapped onto the
// parameters through the parameter-only part of the program.

// Example ids of elements, held in float64 so that the data-movement
// kernels move them as they move values.
const (
	idNone  = -1 // a constant or a parameter-only value: no example
	idMixed = -2 // depends on several examples
)

// combineID is the example of a value computed from values of examples a
// and b.
func combineID(a, b float64) float64 {
	switch {
	case a == b || b == idNone:
		return a
	case a == idNone:
		return b
	}
	return idMixed
}

// PerExample describes how a batched Program separates into examples: which
// example each element of its data-dependent values belongs to, and where
// the parameter cotangents must be split by example. It is made once per
// program by Program.PerExample, is read-only, and may be used by many
// States at once.
type PerExample struct {
	p   *Program
	n   int
	out [][]int32 // per output: the example of each element (nil for static outputs)

	shared []bool // per slot: active and computed from the parameters only
	run    []bool // per step: part of the backward pass (active, separated output)
	pOnly  []int  // steps computing shared values, in program order
	linear bool   // the pOnly steps are linear maps, independent of theta
	prods  []*prodUse
	elems  []*elemUse
	bound  []int    // shared slots that meet the data, in slot order
	plan   *mapPlan // when linear: the maps to theta, the same at every theta
}

// prodUse is one weight block of a matrix product (k×n elements of a
// shared slot from off) met by data rows, collected over every step and
// batch that uses it.
type prodUse struct {
	slot, off, k, n int
	start           []int    // per example: its rows are src[start[e]:start[e+1]]
	src             []rowSrc // rows in example order
	steps           []int    // program steps, indexed by rowSrc.step
	maxRows         int      // most rows of one example
}

// rowSrc is one row of a product: its A row at offset a of the step's
// first input, its output cotangent row at offset g of the step's result.
type rowSrc struct {
	step int32
	a, g int
}

// elemUse is a shared input of an elementwise step (a broadcast operand of
// binK, or the addend of a matmulK) whose output is separated.
type elemUse struct {
	step, in int
	ids      []int32 // the example of each output element
}

// NumExamples returns the number of examples of the batch.
func (x *PerExample) NumExamples() int { return x.n }

// Output returns the example of each element of program output o, or nil
// when the output is static.
func (x *PerExample) Output(o int) []int32 { return x.out[o] }

// PerExample analyses p for per-example gradients. axes has one entry per
// graph input: the axis of that input that indexes the examples, or -1
// for an input all examples share (integer inputs are ignored). It returns
// an error wrapping ErrNotSeparable, naming the node, when some value
// mixes examples, or when the parameters meet the data in a way
// BackwardPerExample does not split: weights that multiply the data from
// the left, or weights computed from the parameters by a matrix product
// or a softmax.
func (p *Program) PerExample(axes []int) (*PerExample, error) {
	if len(axes) != len(p.inputs) {
		return nil, fmt.Errorf("graph: %w: %d example axes for %d inputs", ErrInput, len(axes), len(p.inputs))
	}
	float := make([]bool, len(axes)) // integer inputs were folded into the program
	for _, sl := range p.slots {
		if sl.kind == slotInput {
			float[sl.index] = true
		}
	}
	n := -1
	for i, ax := range axes {
		sh := p.inputs[i]
		if ax < 0 || !float[i] {
			continue
		}
		if ax >= len(sh) {
			return nil, fmt.Errorf("graph: %w: example axis %d of input %q, which has shape %v", ErrInput, ax, p.g.Inputs[i].Name, errs.Value(sh))
		}
		if n >= 0 && sh[ax] != n {
			return nil, fmt.Errorf("graph: %w: input %q has %d examples along axis %d, another input %d", ErrInput, p.g.Inputs[i].Name, sh[ax], ax, n)
		}
		n = sh[ax]
	}
	if n < 0 {
		return nil, fmt.Errorf("graph: %w: no float input has an example axis", ErrInput)
	}
	ids := p.exampleIDs(axes)
	act := p.activeSlots()
	x := &PerExample{p: p, n: n, shared: make([]bool, len(p.slots)), run: make([]bool, len(p.steps)), linear: true}
	sep := make([]bool, len(p.slots))
	for i := range p.slots {
		if !p.live[i] || ids[i] == nil {
			continue
		}
		none, some := true, true
		for _, v := range ids[i].F {
			none = none && v == idNone
			some = some && v >= 0
		}
		switch {
		case none:
			x.shared[i] = act[i]
		case some:
			sep[i] = true
		case act[i]:
			return nil, fmt.Errorf("graph: %w: %s mixes examples", ErrNotSeparable, p.slotOrigin(i))
		}
	}
	for o, v := range p.outputs {
		if v.isStatic() {
			x.out = append(x.out, nil)
			continue
		}
		if !sep[v.slot] && !x.shared[v.slot] {
			return nil, fmt.Errorf("graph: %w: output %d mixes examples", ErrNotSeparable, o)
		}
		x.out = append(x.out, toInt32(ids[v.slot].F))
	}
	bound := map[int]bool{}
	prods := map[[2]int]*prodUse{}
	for si, st := range p.steps {
		switch {
		case !act[st.out]:
			continue
		case x.shared[st.out]:
			x.pOnly = append(x.pOnly, si)
			switch k := st.k.(type) {
			case *mapK, *concatK:
			case *binK:
				x.linear = x.linear && (k.op == opAdd || k.op == opSub)
			case *unaryK:
				x.linear = false
			case paramRule:
				x.linear = x.linear && k.linearRows()
			default:
				return nil, fmt.Errorf("graph: %w: node %q computes weights from the parameters with a %T, which per-example gradients do not follow", ErrNotSeparable, st.node, st.k)
			}
			continue
		}
		x.run[si] = true
		for j, in := range st.in {
			if !x.shared[in] {
				continue
			}
			bound[in] = true
			switch k := st.k.(type) {
			case *binK:
				x.elems = append(x.elems, &elemUse{step: si, in: j, ids: toInt32(ids[st.out].F)})
			case *matmulK:
				switch j {
				case 2:
					x.elems = append(x.elems, &elemUse{step: si, in: j, ids: toInt32(ids[st.out].F)})
				case 1:
					out := ids[st.out].F
					for bi, off := range k.ib {
						key := [2]int{in, off}
						u := prods[key]
						if u == nil {
							u = &prodUse{slot: in, off: off, k: k.k, n: k.n}
							prods[key] = u
							x.prods = append(x.prods, u)
						}
						if u.k != k.k || u.n != k.n {
							return nil, fmt.Errorf("graph: %w: node %q uses a weight block as %d×%d and as %d×%d", ErrNotSeparable, st.node, u.k, u.n, k.k, k.n)
						}
						si32 := int32(len(u.steps))
						if len(u.steps) == 0 || u.steps[len(u.steps)-1] != si {
							u.steps = append(u.steps, si)
						} else {
							si32--
						}
						a := ids[st.in[0]].F
						for r := 0; r < k.m; r++ {
							g := bi*k.m*k.n + r*k.n
							e := float64(idNone)
							for _, v := range a[k.ia[bi]+r*k.k : k.ia[bi]+(r+1)*k.k] {
								e = combineID(e, v)
							}
							for _, v := range out[g : g+k.n] {
								if v != e {
									return nil, fmt.Errorf("graph: %w: node %q: a row of the product belongs to no single example", ErrNotSeparable, st.node)
								}
							}
							u.src = append(u.src, rowSrc{step: si32, a: k.ia[bi] + r*k.k, g: g})
							u.start = append(u.start, int(e)) // the row's example, sorted below
						}
					}
				default:
					return nil, fmt.Errorf("graph: %w: node %q multiplies parameters from the left of the data; per-example gradients need the weights on the right", ErrNotSeparable, st.node)
				}
			default:
				return nil, fmt.Errorf("graph: %w: node %q combines parameters with the data in a %T", ErrNotSeparable, st.node, st.k)
			}
		}
	}
	for _, u := range x.prods {
		u.sortRows(n)
	}
	for i := range p.slots {
		if bound[i] {
			x.bound = append(x.bound, i)
		}
	}
	if x.linear {
		x.plan = x.newPlan(nil)
	}
	return x, nil
}

// sortRows orders u.src by example, stably (u.start holds each row's
// example on entry), and makes u.start the per-example offsets.
func (u *prodUse) sortRows(n int) {
	count := make([]int, n+1)
	for _, e := range u.start {
		count[e+1]++
	}
	for e := 0; e < n; e++ {
		u.maxRows = max(u.maxRows, count[e+1])
		count[e+1] += count[e]
	}
	src := make([]rowSrc, len(u.src))
	next := append([]int(nil), count[:n]...)
	for i, e := range u.start {
		src[next[e]] = u.src[i]
		next[e]++
	}
	u.src, u.start = src, count
}

func toInt32(f []float64) []int32 {
	out := make([]int32, len(f))
	for i, v := range f {
		out[i] = int32(v)
	}
	return out
}

// slotOrigin names the node that computes slot i, for errors.
func (p *Program) slotOrigin(i int) string {
	for _, st := range p.steps {
		if st.out == i {
			return fmt.Sprintf("node %q", st.node)
		}
	}
	return fmt.Sprintf("value %d", i)
}

// exampleIDs propagates example ids through the program: a slot-indexed
// set of tensors (nil for slots no step uses) holding, for each element,
// its example, idNone or idMixed.
func (p *Program) exampleIDs(axes []int) []*Tensor {
	ts := make([]*Tensor, len(p.slots))
	fill := func(n int, v float64) []float64 {
		f := make([]float64, n)
		for i := range f {
			f[i] = v
		}
		return f
	}
	for i, sl := range p.slots {
		if !p.live[i] {
			continue
		}
		t := &Tensor{DType: Float, Shape: sl.shape}
		ts[i] = t
		switch sl.kind {
		case slotParam, slotConst:
			t.F = fill(numel(sl.shape), idNone)
		case slotInput:
			t.F = fill(numel(sl.shape), idNone)
			if ax := axes[sl.index]; ax >= 0 {
				inner := 1
				for _, d := range sl.shape[ax+1:] {
					inner *= d
				}
				for j := range t.F {
					t.F[j] = float64(j / inner % sl.shape[ax])
				}
			}
		}
	}
	p.allocate(ts)
	for i, sl := range p.slots {
		if sl.kind == slotView && ts[i] != nil {
			ts[i].F = sl.viewOf(ts[sl.index].F)
		}
	}
	var ins []*Tensor
	for _, st := range p.steps {
		ins = ins[:0]
		for _, j := range st.in {
			ins = append(ins, ts[j])
		}
		out := ts[st.out].F
		switch k := st.k.(type) {
		case *mapK, *concatK:
			k.forward(nil, ts[st.out], ins)
		case *unaryK:
			copy(out, ins[0].F)
		case *binK:
			a, b := ins[0].F, ins[1].F
			for i := range out {
				out[i] = combineID(a[at(k.ia, i)], b[at(k.ib, i)])
			}
		case *matmulK:
			// out[r][c] combines row r of A and column c of B.
			a, b := ins[0].F, ins[1].F
			col := make([]float64, k.n)
			for bi := range k.ia {
				for c := range col {
					col[c] = idNone
				}
				for q := 0; q < k.k; q++ {
					for c, v := range b[k.ib[bi]+q*k.n : k.ib[bi]+(q+1)*k.n] {
						col[c] = combineID(col[c], v)
					}
				}
				for r := 0; r < k.m; r++ {
					row := float64(idNone)
					for _, v := range a[k.ia[bi]+r*k.k : k.ia[bi]+(r+1)*k.k] {
						row = combineID(row, v)
					}
					for c, v := range col {
						out[bi*k.m*k.n+r*k.n+c] = combineID(row, v)
					}
				}
			}
			if k.add {
				d := ins[2].F
				for i := range out {
					out[i] = combineID(out[i], d[at(k.addIdx, i)])
				}
			}
		case *softmaxK:
			x := ins[0].F
			for o := 0; o < k.outer; o++ {
				for j := 0; j < k.inner; j++ {
					base := o*k.n*k.inner + j
					v := float64(idNone)
					for i := 0; i < k.n; i++ {
						v = combineID(v, x[base+i*k.inner])
					}
					for i := 0; i < k.n; i++ {
						out[base+i*k.inner] = v
					}
				}
			}
		case idRule:
			k.exampleIDs(out, ins)
		default:
			panic(fmt.Sprintf("graph: no example rule for %T", st.k))
		}
	}
	return ts
}

// paramMap is the linear map from the elements of a shared slot to the
// parameter vector (the Jacobian of the parameter-only part of the
// program), in compressed rows: element q has coefficient coef[j] on
// theta[idx[j]] for j in [start[q], start[q+1]). Indices may repeat.
type paramMap struct {
	start []int
	idx   []int
	coef  []float64
}

// Layouts of a product's weight block in the parameter vector.
const (
	layoutNone       = iota // anything else: through an accumulator and the map
	layoutPlain             // W[i][j] = theta[base + i*n + j]
	layoutTransposed        // W[i][j] = theta[base + j*k + i]
)

// mapPlan is how BackwardPerExample maps the split cotangents to theta: the
// maps of the bound slots, the layout of every product's weight block,
// and the slots that need per-example accumulators.
type mapPlan struct {
	maps   map[int]*paramMap
	layout []int // per prodUse
	base   []int
	acc    []int // bound slots with accumulators
	// set (per prodUse) marks the plain and transposed products that
	// are the first to write their weight block, overlapping no earlier
	// one's: they set their block (beta 0) instead of adding to zeros,
	// and only the rest of an example's gradient, the ranges rest, is
	// cleared first (setBlocks).
	set  []bool
	rest [][2]int
}

// exampleState is a State's working memory for BackwardPerExample.
type exampleState struct {
	x    *PerExample
	acc  map[int][]float64 // per slot of a plan's acc: n × slot size
	sink []float64         // where parameter slots point during the pass (never written)
}

// BackwardPerExample is Backward for a batch of examples: after a Forward of
// this State, it sets grads[e] (one vector of length NumParams per
// example of x) to the gradient of sum_o <g[o], y_o> restricted to the output
// elements of example e. With g the loss derivatives, that is every
// example's own loss gradient from one backward pass. The tangent and
// cotangent buffers of Backward are reused, so SecondOrder needs a new
// Backward after it.
func (s *State) BackwardPerExample(x *PerExample, g []*Tensor, grads [][]float64) error {
	p := s.p
	if x.p != p {
		return fmt.Errorf("graph: BackwardPerExample: the example analysis is of another program")
	}
	if !s.ran {
		return fmt.Errorf("graph: BackwardPerExample needs a Forward first")
	}
	if len(grads) != x.n {
		return fmt.Errorf("graph: %w: %d gradients for %d examples", ErrInput, len(grads), x.n)
	}
	P := len(p.g.theta)
	for e, gr := range grads {
		if len(gr) != P {
			return fmt.Errorf("graph: %w: gradient %d has length %d, want %d", ErrInput, e, len(gr), P)
		}
	}
	d := s.diff()
	if d.cot == nil {
		d.cot = s.buffers()
	}
	es := d.ex
	if es == nil || es.x != x {
		es = &exampleState{x: x, acc: map[int][]float64{}, sink: make([]float64, P)}
		d.ex = es
	}
	d.cotValid = false
	if err := s.seed(d.cot, es.sink, g, nil); err != nil {
		return err
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		if !x.run[i] {
			continue
		}
		st := p.steps[i]
		d.gin, s.ins = d.gin[:0], s.ins[:0]
		for _, j := range st.in {
			s.ins = append(s.ins, s.vals[j])
			if x.shared[j] {
				d.gin = append(d.gin, nil)
			} else {
				d.gin = append(d.gin, d.cot[j])
			}
		}
		st.k.vjp(&s.x, d.gin, s.ins, s.vals[st.out], d.cot[st.out])
	}
	plan := x.plan
	if plan == nil {
		plan = x.newPlan(s.vals)
	}
	for _, sl := range plan.acc {
		a := es.acc[sl]
		if a == nil {
			a = make([]float64, x.n*numel(p.slots[sl].shape))
			es.acc[sl] = a
		}
		clear(a)
	}
	s.elemContributions(es)
	need := 0 // scratch for gathering one example's product rows
	for _, u := range x.prods {
		need = max(need, u.maxRows*(u.k+u.n))
	}
	s.x.parallelForGrain(x.n, 16, func(lo, hi int) {
		buf := make([]float64, need)
		for e := lo; e < hi; e++ {
			for _, r := range plan.rest {
				clear(grads[e][r[0]:r[1]])
			}
			s.exampleProducts(es, plan, e, grads[e], buf)
			for _, sl := range plan.acc {
				acc := es.acc[sl]
				m := plan.maps[sl]
				size := len(acc) / x.n
				ge := grads[e]
				for q, v := range acc[e*size : (e+1)*size] {
					if v == 0 {
						continue
					}
					for j := m.start[q]; j < m.start[q+1]; j++ {
						ge[m.idx[j]] += m.coef[j] * v
					}
				}
			}
		}
	})
	return nil
}

// exampleProducts adds example e's share of every product's weight
// cotangent, A_e^T G_e over the rows it owns, to its gradient ge (or to
// the accumulator of the weight's slot).
func (s *State) exampleProducts(es *exampleState, plan *mapPlan, e int, ge, buf []float64) {
	x := es.x
	for ui, u := range x.prods {
		src := u.src[u.start[e]:u.start[e+1]]
		c := len(src)
		beta := 1.0
		if plan.set[ui] {
			beta = 0
		}
		if c == 0 {
			if plan.set[ui] {
				clear(ge[plan.base[ui] : plan.base[ui]+u.k*u.n])
			}
			continue
		}
		A, G := buf[:c*u.k], buf[c*u.k:c*(u.k+u.n)]
		for r, rs := range src {
			st := s.p.steps[u.steps[rs.step]]
			copy(A[r*u.k:(r+1)*u.k], s.vals[st.in[0]].F[rs.a:])
			copy(G[r*u.n:(r+1)*u.n], s.d.cot[st.out].F[rs.g:])
		}
		switch plan.layout[ui] {
		case layoutPlain:
			f64.Gemm(true, false, u.k, u.n, c, 1, A, G, beta, ge[plan.base[ui]:])
		case layoutTransposed:
			f64.Gemm(true, false, u.n, u.k, c, 1, G, A, beta, ge[plan.base[ui]:])
		default:
			acc := es.acc[u.slot]
			size := len(acc) / x.n
			f64.Gemm(true, false, u.k, u.n, c, 1, A, G, 1, acc[e*size+u.off:])
		}
	}
}

// elemContributions adds every elementwise use's per-example cotangents
// to the accumulators.
func (s *State) elemContributions(es *exampleState) {
	x := es.x
	for _, u := range x.elems {
		st := s.p.steps[u.step]
		sl := st.in[u.in]
		acc := es.acc[sl]
		size := len(acc) / x.n
		g := s.d.cot[st.out].F
		switch k := st.k.(type) {
		case *matmulK:
			switch {
			case k.addRow:
				for o := 0; o < len(g); o += k.n {
					e := int(u.ids[o]) * size
					f64.AddTo(acc[e:e+k.n], g[o:o+k.n])
				}
			default:
				for i, v := range g {
					acc[int(u.ids[i])*size+at(k.addIdx, i)] += v
				}
			}
		case *binK:
			a, b := s.vals[st.in[0]].F, s.vals[st.in[1]].F
			idx := k.ia
			if u.in == 1 {
				idx = k.ib
			}
			for i, v := range g {
				ai, bi := at(k.ia, i), at(k.ib, i)
				switch {
				case k.op == opAdd || (k.op == opSub && u.in == 0):
				case k.op == opSub:
					v = -v
				case k.op == opMul && u.in == 0:
					v *= b[bi]
				case k.op == opMul:
					v *= a[ai]
				case u.in == 0: // a / b
					v /= b[bi]
				default:
					v *= -a[ai] / (b[bi] * b[bi])
				}
				acc[int(u.ids[i])*size+at(idx, i)] += v
			}
		}
	}
}

// newPlan computes the maps from the bound slots to theta by carrying
// sparse Jacobian rows forward through the parameter-only steps, and from
// them the plan. vals are the values of the last Forward; they are not
// read when the parameter-only steps are linear (vals nil).
func (x *PerExample) newPlan(vals []*Tensor) *mapPlan {
	p := x.p
	rows := make([]*paramMap, len(p.slots))
	// get returns the rows of a shared slot: a parameter, a view, or a
	// step result already computed.
	var get func(i int) *paramMap
	get = func(i int) *paramMap {
		if rows[i] != nil || !x.shared[i] {
			return rows[i]
		}
		sl := p.slots[i]
		size := numel(sl.shape)
		m := &paramMap{start: make([]int, 1, size+1)}
		switch sl.kind {
		case slotParam:
			off := p.g.params[sl.index].Offset
			for q := 0; q < size; q++ {
				m.idx = append(m.idx, off+q)
				m.coef = append(m.coef, 1)
				m.start = append(m.start, len(m.idx))
			}
		case slotView:
			root := get(sl.index)
			for q := 0; q < size; q++ {
				m.appendRow(root, sl.off+q, 1)
				m.start = append(m.start, len(m.idx))
			}
		default: // the container of parts (placeConcats), all computed
			parts := make([]*paramMap, size)
			at := make([]int, size)
			for j, pj := range p.slots {
				if pj.kind == slotPart && pj.index == i && rows[j] != nil {
					for q := 0; q < numel(pj.shape); q++ {
						parts[pj.off+q], at[pj.off+q] = rows[j], q
					}
				}
			}
			for q := 0; q < size; q++ {
				if parts[q] == nil {
					panic(fmt.Sprintf("graph: parameter-only value %d used before it is computed", i))
				}
				m.appendRow(parts[q], at[q], 1)
				m.start = append(m.start, len(m.idx))
			}
		}
		rows[i] = m
		return m
	}
	for _, si := range x.pOnly {
		st := p.steps[si]
		ins := make([]*paramMap, len(st.in))
		for j, in := range st.in {
			ins[j] = get(in)
		}
		size := numel(p.slots[st.out].shape)
		m := &paramMap{start: make([]int, 1, size+1)}
		switch k := st.k.(type) {
		case *mapK:
			for _, j := range k.idx {
				m.appendRow(ins[0], int(j), 1)
				m.start = append(m.start, len(m.idx))
			}
		case *concatK:
			for o := 0; o < k.outer; o++ {
				for j, c := range k.chunk {
					for q := o * c; q < (o+1)*c; q++ {
						m.appendRow(ins[j], q, 1)
						m.start = append(m.start, len(m.idx))
					}
				}
			}
		case *binK:
			for i := 0; i < size; i++ {
				ai, bi := at(k.ia, i), at(k.ib, i)
				ca, cb := 1.0, 1.0
				switch k.op {
				case opSub:
					cb = -1
				case opMul:
					ca, cb = vals[st.in[1]].F[bi], vals[st.in[0]].F[ai]
				case opDiv:
					a, b := vals[st.in[0]].F[ai], vals[st.in[1]].F[bi]
					ca, cb = 1/b, -a/(b*b)
				}
				m.appendRow(ins[0], ai, ca)
				m.appendRow(ins[1], bi, cb)
				m.start = append(m.start, len(m.idx))
			}
		case *unaryK:
			d, _ := k.a.derivs()
			xv, yv := vals[st.in[0]].F, vals[st.out].F
			for i := 0; i < size; i++ {
				m.appendRow(ins[0], i, d(xv[i], yv[i]))
				m.start = append(m.start, len(m.idx))
			}
		case paramRule:
			var in []*Tensor
			var out *Tensor
			if vals != nil {
				for _, j := range st.in {
					in = append(in, vals[j])
				}
				out = vals[st.out]
			}
			k.paramRows(m, ins, in, out)
		}
		rows[st.out] = m
	}
	plan := &mapPlan{maps: map[int]*paramMap{}, layout: make([]int, len(x.prods)), base: make([]int, len(x.prods))}
	need := map[int]bool{}
	for _, sl := range x.bound {
		plan.maps[sl] = get(sl)
	}
	for _, u := range x.elems {
		need[p.steps[u.step].in[u.in]] = true
	}
	for ui, u := range x.prods {
		plan.layout[ui], plan.base[ui] = plan.maps[u.slot].layoutOf(u)
		if plan.layout[ui] == layoutNone {
			need[u.slot] = true
		}
	}
	for _, sl := range x.bound {
		if need[sl] {
			plan.acc = append(plan.acc, sl)
		}
	}
	plan.setBlocks(x.prods, len(p.g.theta))
	return plan
}

// setBlocks marks the products that set their weight block (mapPlan.set)
// and the ranges of a P-vector no such block covers (mapPlan.rest). A set
// block's values are exactly those of clearing it and adding the product
// (the product's sums start from zero either way), without a pass over
// the gradient's memory: on the 64-unit LSTM the weight blocks are 16,704
// of its 17,217 parameters.
func (plan *mapPlan) setBlocks(prods []*prodUse, P int) {
	plan.set = make([]bool, len(prods))
	var blocks [][2]int
	for ui, u := range prods {
		if plan.layout[ui] == layoutNone {
			continue
		}
		lo, hi := plan.base[ui], plan.base[ui]+u.k*u.n
		free := true
		for _, b := range blocks {
			if lo < b[1] && b[0] < hi {
				free = false
				break
			}
		}
		if free {
			plan.set[ui] = true
			blocks = append(blocks, [2]int{lo, hi})
		}
	}
	slices.SortFunc(blocks, func(a, b [2]int) int { return a[0] - b[0] })
	plan.rest = nil
	at := 0
	for _, b := range blocks {
		if b[0] > at {
			plan.rest = append(plan.rest, [2]int{at, b[0]})
		}
		at = b[1]
	}
	if at < P {
		plan.rest = append(plan.rest, [2]int{at, P})
	}
}

// appendRow appends c times row q of m0 (nothing when m0 is nil: a
// constant operand) to m's last row.
func (m *paramMap) appendRow(m0 *paramMap, q int, c float64) {
	if m0 == nil || c == 0 {
		return
	}
	for j := m0.start[q]; j < m0.start[q+1]; j++ {
		m.idx = append(m.idx, m0.idx[j])
		m.coef = append(m.coef, c*m0.coef[j])
	}
}

// layoutOf tells whether product u's weight block is a plain or a
// transposed view of the parameter vector (each element one parameter,
// coefficient 1), and where it starts.
func (m *paramMap) layoutOf(u *prodUse) (layout, base int) {
	one := func(q int) (int, bool) {
		j := m.start[u.off+q]
		if m.start[u.off+q+1] != j+1 || m.coef[j] != 1 {
			return 0, false
		}
		return m.idx[j], true
	}
	b, ok := one(0)
	if !ok {
		return layoutNone, 0
	}
	plain, trans := true, true
	for i := 0; i < u.k; i++ {
		for j := 0; j < u.n; j++ {
			t, ok := one(i*u.n + j)
			if !ok {
				return layoutNone, 0
			}
			plain = plain && t == b+i*u.n+j
			trans = trans && t == b+j*u.k+i
		}
	}
	switch {
	case plain:
		return layoutPlain, b
	case trans:
		return layoutTransposed, b
	}
	return layoutNone, 0
}
