package graph_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// Attribute constructors for the operator cases.
func aInt(v int64) graph.Attr         { return graph.Attr{Kind: graph.AttrInt, I: v} }
func aFloat(v float64) graph.Attr     { return graph.Attr{Kind: graph.AttrFloat, F: v} }
func aInts(v ...int64) graph.Attr     { return graph.Attr{Kind: graph.AttrInts, Ints: v} }
func aFloats(v ...float64) graph.Attr { return graph.Attr{Kind: graph.AttrFloats, Floats: v} }
func aStr(v string) graph.Attr        { return graph.Attr{Kind: graph.AttrString, S: v} }
func aStrs(v ...string) graph.Attr    { return graph.Attr{Kind: graph.AttrStrings, Strings: v} }

// op is one node with attributes and any number of outputs.
func op(typ string, outs []string, ins []string, attrs map[string]graph.Attr) *graph.Node {
	return &graph.Node{Name: outs[0], OpType: typ, Inputs: ins, Outputs: outs, Attrs: attrs}
}

// opCase is one tiny model for TestOperatorDerivatives: float parameters
// (every float initializer is one), integer constants, nodes and outputs.
type opCase struct {
	name    string
	params  map[string][]int   // float initializers, all parameters
	pos     []string           // parameters drawn from [0.5, 1.5] (logarithms, divisors)
	ints    map[string][]int64 // int64 initializers, rank 1 (constants)
	nodes   []*graph.Node
	outputs []string
}

// opCases covers every operator of graph.SupportedOps, the recurrent
// operators with every activation they accept, and the paths of each rule
// (broadcasting on either side, transposes, several outputs).
func opCases() []opCase {
	ax := func(a int64) map[string]graph.Attr { return map[string]graph.Attr{"axis": aInt(a)} }
	rnnAttrs := func(hidden int64, extra map[string]graph.Attr) map[string]graph.Attr {
		m := map[string]graph.Attr{"hidden_size": aInt(hidden)}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []opCase{
		{name: "Identity Dropout Cast", params: map[string][]int{"a": {2, 3}},
			nodes: []*graph.Node{
				op("Identity", []string{"i"}, []string{"a"}, nil),
				op("Dropout", []string{"d"}, []string{"i"}, nil),
				op("Cast", []string{"y"}, []string{"d"}, map[string]graph.Attr{"to": aInt(11)}),
				op("Mul", []string{"z"}, []string{"y", "a"}, nil),
			}, outputs: []string{"z"}},
		{name: "Add broadcast", params: map[string][]int{"a": {2, 3}, "b": {3}},
			nodes: []*graph.Node{op("Add", []string{"y"}, []string{"a", "b"}, nil), op("Mul", []string{"z"}, []string{"y", "y"}, nil)}, outputs: []string{"z"}},
		{name: "Sub broadcast", params: map[string][]int{"a": {3}, "b": {2, 3}},
			nodes: []*graph.Node{op("Sub", []string{"y"}, []string{"a", "b"}, nil), op("Mul", []string{"z"}, []string{"y", "y"}, nil)}, outputs: []string{"z"}},
		{name: "Mul", params: map[string][]int{"a": {2, 3}, "b": {2, 1}},
			nodes: []*graph.Node{op("Mul", []string{"y"}, []string{"a", "b"}, nil)}, outputs: []string{"y"}},
		{name: "Div", params: map[string][]int{"a": {2, 3}, "b": {3}}, pos: []string{"b"},
			nodes: []*graph.Node{op("Div", []string{"y"}, []string{"a", "b"}, nil)}, outputs: []string{"y"}},
		{name: "Div by a product", params: map[string][]int{"a": {2, 3}, "b": {2, 3}}, pos: []string{"a", "b"},
			nodes: []*graph.Node{op("Mul", []string{"m"}, []string{"a", "b"}, nil), op("Div", []string{"y"}, []string{"b", "m"}, nil)}, outputs: []string{"y"}},
		{name: "Neg", params: map[string][]int{"a": {4}},
			nodes: []*graph.Node{op("Neg", []string{"n"}, []string{"a"}, nil), op("Mul", []string{"y"}, []string{"n", "a"}, nil)}, outputs: []string{"y"}},
		{name: "Tanh", params: map[string][]int{"a": {3, 7}},
			nodes: []*graph.Node{op("Tanh", []string{"y"}, []string{"a"}, nil)}, outputs: []string{"y"}},
		{name: "Tanh wide", params: map[string][]int{"a": {3, 11}}, // the 8-lane kernels and their tails
			nodes: []*graph.Node{op("Tanh", []string{"y"}, []string{"a"}, nil)}, outputs: []string{"y"}},
		{name: "Sigmoid", params: map[string][]int{"a": {5}},
			nodes: []*graph.Node{op("Sigmoid", []string{"y"}, []string{"a"}, nil)}, outputs: []string{"y"}},
		{name: "Relu", params: map[string][]int{"a": {6}},
			nodes: []*graph.Node{op("Relu", []string{"r"}, []string{"a"}, nil), op("Mul", []string{"y"}, []string{"r", "a"}, nil)}, outputs: []string{"y"}},
		{name: "Exp", params: map[string][]int{"a": {5}},
			nodes: []*graph.Node{op("Exp", []string{"y"}, []string{"a"}, nil)}, outputs: []string{"y"}},
		{name: "Log", params: map[string][]int{"a": {5}}, pos: []string{"a"},
			nodes: []*graph.Node{op("Log", []string{"y"}, []string{"a"}, nil)}, outputs: []string{"y"}},
		{name: "LeakyRelu", params: map[string][]int{"a": {6}},
			nodes: []*graph.Node{op("LeakyRelu", []string{"r"}, []string{"a"}, map[string]graph.Attr{"alpha": aFloat(0.1)}), op("Mul", []string{"y"}, []string{"r", "r"}, nil)}, outputs: []string{"y"}},
		{name: "Softmax last axis", params: map[string][]int{"a": {2, 4}},
			nodes: []*graph.Node{op("Softmax", []string{"y"}, []string{"a"}, ax(-1))}, outputs: []string{"y"}},
		{name: "Softmax inner axis", params: map[string][]int{"a": {3, 2, 2}},
			nodes: []*graph.Node{op("Softmax", []string{"y"}, []string{"a"}, ax(1))}, outputs: []string{"y"}},
		{name: "LogSoftmax", params: map[string][]int{"a": {2, 5}},
			nodes: []*graph.Node{op("LogSoftmax", []string{"y"}, []string{"a"}, ax(1))}, outputs: []string{"y"}},
		{name: "MatMul", params: map[string][]int{"a": {3, 4}, "b": {4, 2}},
			nodes: []*graph.Node{op("MatMul", []string{"y"}, []string{"a", "b"}, nil)}, outputs: []string{"y"}},
		{name: "MatMul batched", params: map[string][]int{"a": {2, 5, 4}, "b": {4, 6}},
			nodes: []*graph.Node{op("MatMul", []string{"y"}, []string{"a", "b"}, nil)}, outputs: []string{"y"}},
		{name: "MatMul of one parameter with itself", params: map[string][]int{"a": {4, 4}},
			nodes: []*graph.Node{op("MatMul", []string{"y"}, []string{"a", "a"}, nil)}, outputs: []string{"y"}},
		{name: "Gemm", params: map[string][]int{"a": {4, 3}, "b": {5, 4}, "c": {5}},
			nodes: []*graph.Node{op("Gemm", []string{"y"}, []string{"a", "b", "c"}, map[string]graph.Attr{"transA": aInt(1), "transB": aInt(1), "alpha": aFloat(0.7), "beta": aFloat(1.3)})}, outputs: []string{"y"}},
		{name: "Gemm plain", params: map[string][]int{"a": {6, 4}, "b": {4, 8}, "c": {6, 8}},
			nodes: []*graph.Node{op("Gemm", []string{"g"}, []string{"a", "b", "c"}, nil), op("Tanh", []string{"y"}, []string{"g"}, nil)}, outputs: []string{"y"}},
		{name: "Transpose", params: map[string][]int{"a": {2, 3, 4}},
			nodes: []*graph.Node{op("Transpose", []string{"t"}, []string{"a"}, map[string]graph.Attr{"perm": aInts(2, 0, 1)}), op("Exp", []string{"y"}, []string{"t"}, nil)}, outputs: []string{"y"}},
		{name: "Squeeze Unsqueeze", params: map[string][]int{"a": {3, 1, 2}}, ints: map[string][]int64{"ax1": {1}, "ax0": {0}},
			nodes: []*graph.Node{
				op("Squeeze", []string{"s"}, []string{"a", "ax1"}, nil),
				op("Unsqueeze", []string{"u"}, []string{"s", "ax0"}, nil),
				op("Mul", []string{"y"}, []string{"u", "u"}, nil),
			}, outputs: []string{"y"}},
		{name: "Reshape Flatten", params: map[string][]int{"a": {2, 3, 2}}, ints: map[string][]int64{"shape": {3, -1}},
			nodes: []*graph.Node{
				op("Reshape", []string{"r"}, []string{"a", "shape"}, nil),
				op("Tanh", []string{"t"}, []string{"r"}, nil),
				op("Flatten", []string{"y"}, []string{"a"}, ax(1)),
			}, outputs: []string{"t", "y"}},
		{name: "Concat", params: map[string][]int{"a": {2, 3}, "b": {2, 1}},
			nodes: []*graph.Node{op("Concat", []string{"c"}, []string{"a", "b", "a"}, ax(1)), op("Tanh", []string{"y"}, []string{"c"}, nil)}, outputs: []string{"y"}},
		{name: "Split", params: map[string][]int{"a": {2, 5}}, ints: map[string][]int64{"split": {2, 3}},
			nodes: []*graph.Node{
				op("Split", []string{"p", "q"}, []string{"a", "split"}, ax(1)),
				op("Exp", []string{"e"}, []string{"p"}, nil),
				op("Mul", []string{"y"}, []string{"q", "q"}, nil),
			}, outputs: []string{"e", "y"}},
		{name: "Slice", params: map[string][]int{"a": {4, 5}}, ints: map[string][]int64{"starts": {3, 0}, "ends": {0, 5}, "axes": {0, 1}, "steps": {-1, 2}},
			nodes: []*graph.Node{op("Slice", []string{"s"}, []string{"a", "starts", "ends", "axes", "steps"}, nil), op("Tanh", []string{"y"}, []string{"s"}, nil)}, outputs: []string{"y"}},
		{name: "Gather", params: map[string][]int{"a": {4, 3}}, ints: map[string][]int64{"idx": {2, 0, 2}},
			nodes: []*graph.Node{op("Gather", []string{"g"}, []string{"a", "idx"}, ax(0)), op("Mul", []string{"y"}, []string{"g", "g"}, nil)}, outputs: []string{"y"}},
		{name: "Expand", params: map[string][]int{"a": {3, 1}}, ints: map[string][]int64{"shape": {2, 3, 4}},
			nodes: []*graph.Node{op("Expand", []string{"e"}, []string{"a", "shape"}, nil), op("Tanh", []string{"y"}, []string{"e"}, nil)}, outputs: []string{"y"}},
		{name: "Shape ReduceProd Reshape", params: map[string][]int{"a": {2, 3}}, ints: map[string][]int64{"one": {1}},
			nodes: []*graph.Node{
				op("Shape", []string{"s"}, []string{"a"}, nil),
				op("ReduceProd", []string{"n"}, []string{"s"}, map[string]graph.Attr{"keepdims": aInt(1)}),
				op("Concat", []string{"shape"}, []string{"n", "one"}, ax(0)),
				op("Reshape", []string{"r"}, []string{"a", "shape"}, nil),
				op("Exp", []string{"y"}, []string{"r"}, nil),
			}, outputs: []string{"y"}},
		{name: "Constant ConstantOfShape", params: map[string][]int{"a": {2, 3}}, ints: map[string][]int64{"shape": {2, 3}},
			nodes: []*graph.Node{
				op("Constant", []string{"k"}, nil, map[string]graph.Attr{"value_floats": aFloats(0.5, -1, 2)}),
				op("ConstantOfShape", []string{"z"}, []string{"shape"}, map[string]graph.Attr{"value": {Kind: graph.AttrTensor, T: graph.NewFloat([]int{1}, []float64{0.25})}}),
				op("Mul", []string{"m"}, []string{"a", "k"}, nil),
				op("Add", []string{"s"}, []string{"m", "z"}, nil),
				op("Mul", []string{"y"}, []string{"s", "a"}, nil),
			}, outputs: []string{"y"}},
		{name: "Range TopK ScatterElements", params: map[string][]int{"a": {4, 3}},
			ints: map[string][]int64{"start": {0}, "limit": {3}, "delta": {1}, "v": {5, 1, 9, 3}, "k": {2}, "data": {0, 0, 0}, "sidx": {2}, "upd": {1}},
			nodes: []*graph.Node{
				op("Range", []string{"rg"}, []string{"start", "limit", "delta"}, nil),         // 0, 1, 2
				op("TopK", []string{"tv", "ti"}, []string{"v", "k"}, ax(0)),                   // indices 2, 0
				op("ScatterElements", []string{"sc"}, []string{"data", "sidx", "upd"}, ax(0)), // 0, 0, 1
				op("Gather", []string{"g1"}, []string{"a", "rg"}, ax(0)),
				op("Gather", []string{"g2"}, []string{"a", "ti"}, ax(0)),
				op("Gather", []string{"g3"}, []string{"a", "sc"}, ax(0)),
				op("Mul", []string{"y"}, []string{"g1", "g3"}, nil),
			}, outputs: []string{"y", "g2"}},
	}
	// Recurrent operators: X, W, R, B (and initial states, peepholes) all
	// parameters. 3 steps, batch 2, 2 inputs, hidden 3.
	recur := func(name, typ string, gates int, dirs int, attrs map[string]graph.Attr, extra ...string) opCase {
		hidden := 3
		p := map[string][]int{
			"X": {3, 2, 2},
			"W": {dirs, gates * hidden, 2},
			"R": {dirs, gates * hidden, hidden},
			"B": {dirs, 2 * gates * hidden},
		}
		ins := []string{"X", "W", "R", "B"}
		for _, e := range extra {
			switch e {
			case "h0":
				p["h0"] = []int{dirs, 2, hidden}
				ins = append(ins, "", "h0")
			case "c0P":
				p["h0"], p["c0"], p["P"] = []int{dirs, 2, hidden}, []int{dirs, 2, hidden}, []int{dirs, 3 * hidden}
				ins = append(ins, "", "h0", "c0", "P")
			}
		}
		return opCase{name: name, params: p,
			nodes:   []*graph.Node{op(typ, []string{"Y", "Yh"}, ins, rnnAttrs(int64(hidden), attrs))},
			outputs: []string{"Y", "Yh"}}
	}
	cases = append(cases,
		recur("RNN", "RNN", 1, 1, nil),
		recur("RNN bidirectional with initial state", "RNN", 1, 2, map[string]graph.Attr{"direction": aStr("bidirectional")}, "h0"),
		recur("RNN reverse", "RNN", 1, 1, map[string]graph.Attr{"direction": aStr("reverse")}),
		recur("LSTM", "LSTM", 4, 1, nil),
		recur("LSTM peepholes, clip, input_forget", "LSTM", 4, 1, map[string]graph.Attr{"clip": aFloat(2.5), "input_forget": aInt(1)}, "c0P"),
		recur("LSTM bidirectional", "LSTM", 4, 2, map[string]graph.Attr{"direction": aStr("bidirectional")}),
		recur("GRU", "GRU", 3, 1, nil),
		recur("GRU linear_before_reset", "GRU", 3, 1, map[string]graph.Attr{"linear_before_reset": aInt(1)}, "h0"),
	)
	// Every activation a recurrent operator accepts (activations.go), with
	// explicit alphas and betas where it takes them.
	for _, a := range []struct {
		name        string
		alpha, beta []float64
	}{
		{"Tanh", nil, nil}, {"Sigmoid", nil, nil}, {"Relu", nil, nil}, {"Softsign", nil, nil},
		{"Softplus", nil, nil}, {"LeakyRelu", []float64{0.2}, nil}, {"ThresholdedRelu", []float64{0.3}, nil},
		{"Elu", []float64{0.8}, nil}, {"ScaledTanh", []float64{1.2}, []float64{0.7}},
		{"HardSigmoid", []float64{0.15}, []float64{0.4}}, {"Affine", []float64{0.9}, []float64{0.1}},
	} {
		attrs := map[string]graph.Attr{"activations": aStrs(a.name)}
		if a.alpha != nil {
			attrs["activation_alpha"] = aFloats(a.alpha...)
		}
		if a.beta != nil {
			attrs["activation_beta"] = aFloats(a.beta...)
		}
		cases = append(cases, recur("RNN "+a.name, "RNN", 1, 1, attrs))
	}
	cases = append(cases, moreOpCases()...)
	return append(cases, controlFlowOpCases()...)
}

// TestOperatorDerivatives checks, for every supported operator, the three
// derivative rules of the compiled program against central differences of
// the forward pass (step 1e-6, relative tolerance 1e-6): the tangent
// (State.Tangent, J v), the vector-Jacobian product (State.Backward, J^T w,
// against the difference quotient of <w, y> along every coordinate) and
// the second-order rule (State.SecondOrder, J^T u + (D_v J^T) w, against
// the difference quotient of the gradient along v plus J^T u). Every
// float initializer is a parameter, so derivatives reach every operand.
func TestOperatorDerivatives(t *testing.T) {
	cases := opCases()
	covered := map[string]bool{}
	for _, c := range cases {
		for _, n := range c.nodes {
			covered[n.OpType] = true
		}
	}
	for _, op := range graph.SupportedOps() {
		if !covered[op] {
			t.Errorf("operator %s has no derivative case", op)
		}
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkOpDerivatives(t, c, uint64(ci))
		})
	}
}

// checkOpDerivatives builds and compiles one case and compares its three
// derivative rules with central differences.
func checkOpDerivatives(t *testing.T, c opCase, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 17))
	init := map[string]*graph.Tensor{}
	var order []string
	names := make([]string, 0, len(c.params))
	for name := range c.params {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w := graph.NewFloat(c.params[name], nil)
		for i := range w.F {
			if slices.Contains(c.pos, name) {
				w.F[i] = 0.5 + r.Float64()
			} else {
				// Away from 0, where Relu-like rules have kinks.
				w.F[i] = math.Copysign(0.1+r.Float64(), r.NormFloat64())
			}
		}
		init[name], order = w, append(order, name)
	}
	for name, v := range c.ints {
		init[name] = graph.NewInt([]int{len(v)}, v)
	}
	var outs []graph.ValueInfo
	for _, o := range c.outputs {
		outs = append(outs, graph.ValueInfo{Name: o, Elem: graph.ElemDouble})
	}
	g, err := graph.New(17, nil, outs, c.nodes, init, order)
	if err != nil {
		t.Fatal(err)
	}
	checkDerivatives(t, g, nil, r)
}

// checkDerivatives compares the three derivative rules of g, compiled for
// inputs, with central differences (see TestOperatorDerivatives).
func checkDerivatives(t *testing.T, g *graph.Graph, inputs []*graph.Tensor, r *rand.Rand) {
	t.Helper()
	const (
		h   = 1e-6
		tol = 1e-6
	)
	p, err := g.Compile(inputs)
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	P := len(theta)
	if P == 0 {
		t.Fatal("no parameters")
	}
	st := p.NewState()
	forward := func(th []float64) [][]float64 {
		ys, err := st.Forward(th, inputs)
		if err != nil {
			t.Fatal(err)
		}
		res := make([][]float64, len(ys))
		for i, y := range ys {
			res[i] = append([]float64(nil), y.F...)
		}
		return res
	}
	y0 := forward(theta)
	// Output weights w (the cotangent), their change u, and a direction v.
	randLike := func() []*graph.Tensor {
		ts := make([]*graph.Tensor, len(y0))
		for i, y := range y0 {
			ts[i] = graph.NewFloat([]int{len(y)}, nil)
			for j := range ts[i].F {
				ts[i].F[j] = r.NormFloat64()
			}
		}
		return ts
	}
	w, u := randLike(), randLike()
	v := make([]float64, P)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	// Seeds must have the outputs' shapes.
	shaped := func(ts []*graph.Tensor) []*graph.Tensor {
		ys, _ := st.Forward(theta, inputs)
		out := make([]*graph.Tensor, len(ts))
		for i, tt := range ts {
			out[i] = graph.NewFloat(ys[i].Shape, tt.F)
		}
		return out
	}
	w, u = shaped(w), shaped(u)
	phi := func(th []float64) float64 {
		s := 0.0
		for i, y := range forward(th) {
			for j, yv := range y {
				s += w[i].F[j] * yv
			}
		}
		return s
	}
	gradient := func(th []float64, seeds []*graph.Tensor) []float64 {
		if _, err := st.Forward(th, inputs); err != nil {
			t.Fatal(err)
		}
		grad := make([]float64, P)
		if err := st.Backward(seeds, grad); err != nil {
			t.Fatal(err)
		}
		return grad
	}
	along := func(s float64) []float64 {
		th := make([]float64, P)
		for i := range th {
			th[i] = theta[i] + s*v[i]
		}
		return th
	}

	// Tangent: J v against (y(theta + h v) - y(theta - h v)) / 2h.
	if _, err := st.Forward(theta, inputs); err != nil {
		t.Fatal(err)
	}
	douts, err := st.Tangent(v)
	if err != nil {
		t.Fatal(err)
	}
	var gotT, wantT []float64
	for i := range douts {
		if douts[i] == nil {
			gotT = append(gotT, make([]float64, len(y0[i]))...)
		} else {
			gotT = append(gotT, douts[i].F...)
		}
	}
	yp, ym := forward(along(h)), forward(along(-h))
	for i := range yp {
		for j := range yp[i] {
			wantT = append(wantT, (yp[i][j]-ym[i][j])/(2*h))
		}
	}
	compareFD(t, "tangent", gotT, wantT, tol)

	// Vector-Jacobian product: J^T w against the difference quotient of
	// <w, y> along each coordinate.
	gotG := gradient(theta, w)
	wantG := make([]float64, P)
	th := append([]float64(nil), theta...)
	for i := range th {
		th[i] = theta[i] + h
		fp := phi(th)
		th[i] = theta[i] - h
		fm := phi(th)
		th[i] = theta[i]
		wantG[i] = (fp - fm) / (2 * h)
	}
	compareFD(t, "backward", gotG, wantG, tol)

	// Second order: J^T u + (D_v J^T) w against J^T u plus the difference
	// quotient of J^T w along v.
	gp, gm := gradient(along(h), w), gradient(along(-h), w)
	ju := gradient(theta, u)
	wantH := make([]float64, P)
	for i := range wantH {
		wantH[i] = ju[i] + (gp[i]-gm[i])/(2*h)
	}
	if _, err := st.Forward(theta, inputs); err != nil {
		t.Fatal(err)
	}
	if err := st.Backward(w, make([]float64, P)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Tangent(v); err != nil {
		t.Fatal(err)
	}
	gotH := make([]float64, P)
	if err := st.SecondOrder(u, gotH); err != nil {
		t.Fatal(err)
	}
	compareFD(t, "second order", gotH, wantH, tol)
}

// compareFD fails when got and the difference quotients want differ by
// more than tol relative to want's largest element.
func compareFD(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1e-8
	for _, x := range want {
		scale = math.Max(scale, math.Abs(x))
	}
	worst := 0.0
	for i := range want {
		d := math.Abs(got[i] - want[i])
		if !(d <= tol*scale) {
			t.Errorf("%s[%d] = %.10g, central differences %.10g (difference %.2g, %.2g of the largest)", what, i, got[i], want[i], d, d/scale)
			return
		}
		worst = math.Max(worst, d/scale)
	}
	t.Logf("%s: %d values, largest difference %.1e of the largest value", what, len(want), worst)
}
