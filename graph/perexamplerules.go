package graph

// The per-example rules of the operator-family kernels (Program.PerExample,
// perexample.go): which example each output element comes from (idRule)
// and the rows of the kernel's Jacobian that carry parameter gradients
// (paramRule).

// idRule is implemented by the kernels of the operator families: exampleIDs writes, for
// each output element, the example of the input elements it is computed
// from (combineID of them), given the inputs' example ids.
type idRule interface {
	exampleIDs(out []float64, in []*Tensor)
}

// elementIDs is the rule of a broadcasting elementwise kernel: output i
// combines the inputs' elements idx[j][i].
func elementIDs(out []float64, in []*Tensor, idx ...[]int32) {
	for i := range out {
		v := float64(idNone)
		for j, t := range in {
			v = combineID(v, t.F[at(idx[j], i)])
		}
		out[i] = v
	}
}

func (k *fn2K) exampleIDs(out []float64, in []*Tensor) { elementIDs(out, in, k.ia, k.ib) }
func (k *cmpK) exampleIDs(out []float64, in []*Tensor) { elementIDs(out, in, k.ia, k.ib) }
func (k *selK) exampleIDs(out []float64, in []*Tensor) { elementIDs(out, in, k.ic, k.ia, k.ib) }

// paramRule is implemented by the kernels of the operator families so that
// per-example gradients follow weights computed from the parameters with
// them (Program.PerExample): paramRows appends to m one row per output
// element, the kernel's Jacobian applied to the input rows ins (nil for a
// constant input) at the values in and out (nil when linearRows, which
// says the rows do not depend on the values).
type paramRule interface {
	linearRows() bool
	paramRows(m *paramMap, ins []*paramMap, in []*Tensor, out *Tensor)
}

func (k *reduceK) linearRows() bool { return k.op == reduceSum }

func (k *reduceK) paramRows(m *paramMap, ins []*paramMap, in []*Tensor, out *Tensor) {
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.inner; j++ {
			base := o*k.n*k.inner + j
			if k.op == reduceSum {
				for r := 0; r < k.n; r++ {
					m.appendRow(ins[0], base+r*k.inner, 1)
				}
			} else if p := k.arg(in[0].F, out.F[o*k.inner+j], base); p >= 0 {
				m.appendRow(ins[0], p, 1)
			}
			m.start = append(m.start, len(m.idx))
		}
	}
}

func (k *fn2K) linearRows() bool { return false }

func (k *fn2K) paramRows(m *paramMap, ins []*paramMap, in []*Tensor, out *Tensor) {
	for i := range out.F {
		ai, bi := at(k.ia, i), at(k.ib, i)
		a, b := in[0].F[ai], in[1].F[bi]
		m.appendRow(ins[0], ai, k.f.da(a, b))
		m.appendRow(ins[1], bi, k.f.db(a, b))
		m.start = append(m.start, len(m.idx))
	}
}

// cmpK's rows are zero; it reads the output's size from out.
func (k *cmpK) linearRows() bool { return false }

func (k *cmpK) paramRows(m *paramMap, ins []*paramMap, in []*Tensor, out *Tensor) {
	for range out.F {
		m.start = append(m.start, len(m.idx))
	}
}

func (k *selK) linearRows() bool { return false }

func (k *selK) paramRows(m *paramMap, ins []*paramMap, in []*Tensor, out *Tensor) {
	for i := range out.F {
		if k.pick(in, i) {
			m.appendRow(ins[1], at(k.ia, i), 1)
		} else {
			m.appendRow(ins[2], at(k.ib, i), 1)
		}
		m.start = append(m.start, len(m.idx))
	}
}

func (k *padK) linearRows() bool { return true }

func (k *padK) paramRows(m *paramMap, ins []*paramMap, in []*Tensor, out *Tensor) {
	for _, j := range k.idx {
		if j >= 0 {
			m.appendRow(ins[0], int(j), 1)
		} else {
			m.appendRow(ins[1], 0, 1)
		}
		m.start = append(m.start, len(m.idx))
	}
}
