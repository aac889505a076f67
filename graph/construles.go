package graph

import (
	"fmt"
	"math"
	"path"
	"strings"
)

// The rules, beyond those of constants.go, by which a float initializer
// that the outputs depend on is a constant rather than a trained
// parameter. Each looks at what only an exporter or a data pipeline
// writes, never at what training could produce, so that a trained tensor
// is not caught by chance:
//
//   - input normalisers: Add, Sub, Mul or Div of a graph input (through
//     Identity, Cast, Transpose, Reshape, Squeeze, Unsqueeze, Flatten and
//     earlier normalisers) with a scalar or one
//     value per column, used nowhere else, whose result reaches only the
//     first input of trained linear layers (MatMul, Gemm, Conv, RNN, GRU,
//     LSTM): (x - mean) / std baked into the export. They are statistics
//     of the data; as parameters they would also be redundant with that
//     layer's weights and bias. y = w x + b alone is a model, not a
//     normaliser;
//   - masks: every value 0 or infinite (or at least 1e9 in magnitude), as
//     a causal attention mask stored as a buffer of 0 and -inf;
//   - folded scalars: a tensor of rank 0 whose value is round (an
//     integer, a power of ten, the square root of an integer or its
//     inverse, as float32 or float64): the 1.0, 2.0 or 1/sqrt(d) that an
//     exporter or a simplifier folds from a Python number into an
//     initializer. A trained float never lands exactly on such a value
//     (a one-element tensor of shape [1], the shape of a trained
//     nn.Parameter(torch.ones(1)), is left to the other rules);
//   - sinusoidal position tables: a table whose first position is exactly
//     0 and 1 in equal numbers (sin 0 and cos 0) with every value in
//     [-1, 1];
//   - names that PyTorch gives only to buffers: running_mean,
//     running_var, num_batches_tracked as the last part of the name.
//
// A file whose exporter recorded which initializers were trained
// (WithTrained) is read by that record instead.

// extraConstants returns the initializers that the rules above make
// constants, with the reason for each.
func (g *Graph) extraConstants() map[string]string {
	out := map[string]string{}
	uses := map[string]int{}
	for _, n := range g.Nodes {
		for _, in := range nodeInputs(n) {
			uses[in]++
		}
	}
	for name, why := range g.inputNormalisers(uses) {
		out[name] = why
	}
	for _, name := range g.InitOrder {
		t := g.Init[name]
		if t == nil || t.DType != Float || out[name] != "" {
			continue
		}
		if why := valueRule(t); why != "" {
			out[name] = why
			continue
		}
		base := path.Base(strings.ReplaceAll(name, ".", "/"))
		switch base {
		case "running_mean", "running_var", "num_batches_tracked":
			out[name] = fmt.Sprintf("PyTorch names only buffers %s: a statistic of the data, not trained", base)
		}
	}
	return out
}

// inputNormalisers returns the initializers that normalise a graph input
// (see above), with the reason for each.
func (g *Graph) inputNormalisers(uses map[string]int) map[string]string {
	out := map[string]string{}
	from := map[string]string{}  // value -> the graph input it normalises
	owner := map[string]string{} // normaliser -> that graph input
	for _, in := range g.Inputs {
		if dt, _ := in.Elem.DType(); dt == Float {
			from[in.Name] = in.Name
		}
	}
	isConst := func(v string) bool {
		t := g.Init[v]
		return t != nil && t.DType == Float && uses[v] == 1 && perColumn(t)
	}
	chain := map[*Node]bool{}
	for _, n := range g.Nodes {
		if len(n.Outputs) == 0 || len(n.Inputs) == 0 {
			continue
		}
		switch n.OpType {
		case "Identity", "Cast", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten":
			if x, ok := from[n.Inputs[0]]; ok {
				from[n.Outputs[0]] = x
				chain[n] = true
			}
		case "Add", "Sub", "Mul", "Div":
			if len(n.Inputs) != 2 {
				continue
			}
			a, b := n.Inputs[0], n.Inputs[1]
			x, ok := from[a]
			c := b
			if !ok && (n.OpType == "Add" || n.OpType == "Mul") {
				x, ok = from[b]
				c = a
			}
			if !ok || !isConst(c) {
				continue
			}
			out[c] = fmt.Sprintf("normalises graph input %q (%s node %q), as (x - mean) / std baked into the export, before a trained layer: a statistic of the data, not trained", x, n.OpType, n.Label())
			owner[c] = x
			from[n.Outputs[0]] = x
			chain[n] = true
		}
	}
	// The normalised input must reach only trained layers that read it
	// linearly (the first input of MatMul, Gemm, Conv, RNN, GRU, LSTM),
	// besides Shape and Size:
	// what they add spans what the statistics would. Otherwise (the
	// chain is the whole model, y = w x + b, or it feeds a nonlinearity)
	// its initializers stay parameters.
	bad := map[string]bool{}
	for _, o := range g.Outputs {
		if x, ok := from[o.Name]; ok {
			bad[x] = true
		}
	}
	for _, n := range g.Nodes {
		if chain[n] {
			continue
		}
		for i, in := range nodeInputs(n) {
			x, ok := from[in]
			if !ok || in == x {
				continue
			}
			switch n.OpType {
			case "Shape", "Size": // read only the shape
				continue
			case "MatMul", "Gemm", "Conv", "RNN", "GRU", "LSTM":
				if i == 0 {
					continue
				}
			}
			bad[x] = true
		}
	}
	for c, x := range owner {
		if bad[x] {
			delete(out, c)
		}
	}
	return out
}

// valueRule returns why the values of t make it a constant (a mask, a
// folded scalar, a sinusoidal position table), or "".
func valueRule(t *Tensor) string {
	if len(t.F) == 0 {
		return ""
	}
	if len(t.F) == 1 {
		if len(t.Shape) == 0 && roundValue(t.F[0]) {
			v := t.F[0]
			return fmt.Sprintf("a folded scalar (%g): a round value such as an exporter folds, which training does not produce", v)
		}
		return ""
	}
	mask, inf := true, false
	for _, v := range t.F {
		switch {
		case math.IsInf(v, 0):
			inf = true
		case math.Abs(v) >= 1e9:
		case v != 0:
			mask = false
		}
		if !mask {
			break
		}
	}
	if mask && (inf || slicesAnyNonzero(t.F)) {
		return "a mask: every value is 0 or infinite (or beyond 1e9 in magnitude), which training does not produce"
	}
	if positionTable(t) {
		return "a sinusoidal position table (its first position is sin 0 = 0 and cos 0 = 1 exactly, every value in [-1, 1]): computed, not trained"
	}
	return ""
}

// slicesAnyNonzero reports whether some value of f is not 0.
func slicesAnyNonzero(f []float64) bool {
	for _, v := range f {
		if v != 0 {
			return true
		}
	}
	return false
}

// roundValue reports whether v is, in float64 or float32, an integer of
// at most 1e6 in magnitude, a power of ten from 1e-12 to 1e12, or the
// square root of an integer up to 1e6 or its inverse.
func roundValue(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	a := math.Abs(v)
	same := func(c float64) bool { return a == c || a == float64(float32(c)) }
	if a <= 1e6 && same(math.Round(a)) {
		return true
	}
	if a > 0 {
		if k := math.Round(math.Log10(a)); math.Abs(k) <= 12 && same(math.Pow(10, k)) {
			return true
		}
		for _, s := range []float64{a, 1 / a} {
			if n := math.Round(s * s); n >= 2 && n <= 1e6 {
				if r := math.Sqrt(n); same(r) || same(1/r) {
					return true
				}
			}
		}
	}
	return false
}

// positionTable reports whether t looks like a sinusoidal position
// table: at least two axes, an even last axis of at least 2, every value
// in [-1, 1], and the first row along the first axis longer than 1
// (the positions) exactly half 0 and half 1.
func positionTable(t *Tensor) bool {
	r := len(t.Shape)
	if r < 2 || t.Shape[r-1] < 2 || t.Shape[r-1]%2 != 0 {
		return false
	}
	pos := -1
	for a := 0; a < r-1; a++ {
		if t.Shape[a] > 1 {
			pos = a
			break
		}
	}
	if pos < 0 {
		return false
	}
	for _, v := range t.F {
		if !(math.Abs(v) <= 1) {
			return false
		}
	}
	// The first position's values: index 0 along pos, everything after.
	inner := 1
	for _, d := range t.Shape[pos+1:] {
		inner *= d
	}
	zeros, ones := 0, 0
	for _, v := range t.F[:inner] {
		switch v {
		case 0:
			zeros++
		case 1:
			ones++
		default:
			return false
		}
	}
	return zeros == ones
}
