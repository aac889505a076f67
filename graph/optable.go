package graph

import "sort"

// opFamilies lowers the operator families beyond the recurrent-model core
// of ops.go, each in its own file: elementwise functions (elementwise.go),
// reductions (reduce.go), normalisation (norm.go), convolution, pooling and
// padding (conv.go), and the remaining tensor operators (tensorops.go).
var opFamilies = []map[string]lowerFunc{elementwiseOps, reduceOps, normOps, convOps, tensorOps}

// familyLowerer returns the lowering of op from opFamilies.
func familyLowerer(op string) (lowerFunc, bool) {
	for _, fam := range opFamilies {
		if f, ok := fam[op]; ok {
			return f, true
		}
	}
	return nil, false
}

// allOps returns every operator type lowererFor accepts, sorted.
func allOps() []string {
	out := append([]string(nil), supportedOps...)
	for _, fam := range opFamilies {
		for op := range fam {
			out = append(out, op)
		}
	}
	sort.Strings(out)
	return out
}

// idRule is implemented by the kernels of moreOps: exampleIDs writes, for
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

// needAll returns the node's first len(names) inputs, all required; names
// are the inputs' names in the operator's specification, for the error.
func needAll(in []*value, names ...string) ([]*value, error) {
	vs := make([]*value, len(names))
	for i, name := range names {
		v, err := need(in, i, name)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}
