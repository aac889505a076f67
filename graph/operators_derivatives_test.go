package graph_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// moreOpCases are the derivative cases of the operator families beyond the
// recurrent core (the families of graph/optable.go), checked by TestOperatorDerivatives.
func moreOpCases() []opCase {
	unary := func(typ string, pos bool, attrs map[string]graph.Attr) opCase {
		c := opCase{name: typ, params: map[string][]int{"a": {2, 5}},
			nodes: []*graph.Node{
				op(typ, []string{"f"}, []string{"a"}, attrs),
				op("Mul", []string{"y"}, []string{"f", "f"}, nil), // a nonzero second derivative for piecewise-linear functions
			}, outputs: []string{"y"}}
		if pos {
			c.pos = []string{"a"}
		}
		return c
	}
	fl := func(name string, v float64) map[string]graph.Attr { return map[string]graph.Attr{name: aFloat(v)} }
	cases := []opCase{
		unary("Abs", false, nil),
		unary("Sqrt", true, nil),
		unary("Erf", false, nil),
		unary("Sin", false, nil),
		unary("Cos", false, nil),
		unary("Reciprocal", true, nil),
		unary("Sign", false, nil),
		unary("Softplus", false, nil),
		unary("Softsign", false, nil),
		unary("Mish", false, nil),
		unary("HardSwish", false, nil),
		unary("Elu", false, fl("alpha", 0.7)),
		unary("Selu", false, nil),
		unary("Celu", false, fl("alpha", 1.5)),
		unary("HardSigmoid", false, map[string]graph.Attr{"alpha": aFloat(0.3), "beta": aFloat(0.45)}),
		unary("Gelu", false, nil),
		{name: "Gelu tanh", params: map[string][]int{"a": {7}},
			nodes: []*graph.Node{op("Gelu", []string{"y"}, []string{"a"}, map[string]graph.Attr{"approximate": aStr("tanh")})}, outputs: []string{"y"}},
		{name: "Clip constant bounds", params: map[string][]int{"a": {3, 4}},
			nodes: []*graph.Node{
				op("Constant", []string{"lo"}, nil, map[string]graph.Attr{"value_float": aFloat(-0.5)}),
				op("Constant", []string{"hi"}, nil, map[string]graph.Attr{"value_float": aFloat(0.6)}),
				op("Clip", []string{"c"}, []string{"a", "lo", "hi"}, nil),
				op("Mul", []string{"y"}, []string{"c", "a"}, nil),
			}, outputs: []string{"y"}},
		{name: "Clip parameter bounds", params: map[string][]int{"a": {3, 4}, "lo": {}, "hi": {1}},
			nodes: []*graph.Node{
				op("Clip", []string{"c"}, []string{"a", "lo", "hi"}, nil),
				op("Mul", []string{"y"}, []string{"c", "a"}, nil),
			}, outputs: []string{"y"}},
		{name: "Pow of parameters", params: map[string][]int{"a": {2, 3}, "b": {3}}, pos: []string{"a"},
			nodes: []*graph.Node{op("Pow", []string{"y"}, []string{"a", "b"}, nil)}, outputs: []string{"y"}},
		{name: "Pow constant exponent", params: map[string][]int{"a": {2, 3}}, pos: []string{"a"},
			nodes: []*graph.Node{
				op("Constant", []string{"p"}, nil, map[string]graph.Attr{"value_float": aFloat(2.5)}),
				op("Pow", []string{"y"}, []string{"a", "p"}, nil),
			}, outputs: []string{"y"}},
		{name: "PRelu", params: map[string][]int{"a": {2, 3, 4}, "s": {3, 1}},
			nodes: []*graph.Node{op("PRelu", []string{"r"}, []string{"a", "s"}, nil), op("Mul", []string{"y"}, []string{"r", "a"}, nil)}, outputs: []string{"y"}},
		{name: "Max Min", params: map[string][]int{"a": {2, 3}, "b": {3}, "c": {2, 1}},
			nodes: []*graph.Node{
				op("Max", []string{"m"}, []string{"a", "b", "c"}, nil),
				op("Min", []string{"n"}, []string{"a", "b"}, nil),
				op("Mul", []string{"y"}, []string{"m", "n"}, nil),
			}, outputs: []string{"y"}},
		{name: "Sum Mean", params: map[string][]int{"a": {2, 3}, "b": {3}},
			nodes: []*graph.Node{
				op("Sum", []string{"s"}, []string{"a", "b", "a"}, nil),
				op("Mean", []string{"m"}, []string{"s", "b"}, nil),
				op("Mul", []string{"y"}, []string{"m", "s"}, nil),
			}, outputs: []string{"y"}},
		{name: "Where constant condition", params: map[string][]int{"a": {2, 3}, "b": {3}}, ints: map[string][]int64{"c": {1, 0, 1}},
			nodes: []*graph.Node{
				op("Where", []string{"w"}, []string{"c", "a", "b"}, nil),
				op("Mul", []string{"y"}, []string{"w", "a"}, nil),
			}, outputs: []string{"y"}},
		{name: "Where Not Equal GreaterOrEqual LessOrEqual on comparisons", params: map[string][]int{"a": {2, 3}, "b": {2, 3}},
			nodes: []*graph.Node{
				op("Greater", []string{"g"}, []string{"a", "b"}, nil),
				op("Less", []string{"l"}, []string{"a", "b"}, nil),
				op("GreaterOrEqual", []string{"ge"}, []string{"a", "b"}, nil),
				op("LessOrEqual", []string{"le"}, []string{"a", "b"}, nil),
				op("Equal", []string{"e"}, []string{"ge", "g"}, nil),
				op("Not", []string{"ne"}, []string{"e"}, nil),
				op("Where", []string{"w"}, []string{"g", "a", "b"}, nil),
				op("Where", []string{"w2"}, []string{"l", "w", "a"}, nil),
				op("Where", []string{"w3"}, []string{"le", "w2", "b"}, nil),
				op("Where", []string{"w4"}, []string{"ne", "w3", "a"}, nil),
				op("Mul", []string{"y"}, []string{"w4", "b"}, nil),
			}, outputs: []string{"y"}},
	}
	red := func(typ string, axes []int64, keep int64, pos bool) opCase {
		c := opCase{name: fmt.Sprintf("%s axes %v keepdims %d", typ, axes, keep), params: map[string][]int{"a": {2, 3, 4}},
			nodes: []*graph.Node{
				op(typ, []string{"r"}, []string{"a"}, map[string]graph.Attr{"axes": aInts(axes...), "keepdims": aInt(keep)}),
				op("Mul", []string{"y"}, []string{"r", "r"}, nil),
			}, outputs: []string{"y"}}
		if pos {
			c.pos = []string{"a"}
		}
		return c
	}
	cases = append(cases,
		opCase{name: "ReduceSum axes input", params: map[string][]int{"a": {2, 3, 4}}, ints: map[string][]int64{"axes": {1}},
			nodes: []*graph.Node{
				op("ReduceSum", []string{"r"}, []string{"a", "axes"}, map[string]graph.Attr{"keepdims": aInt(0)}),
				op("Mul", []string{"y"}, []string{"r", "r"}, nil),
			}, outputs: []string{"y"}},
		opCase{name: "ReduceSum not adjacent axes", params: map[string][]int{"a": {2, 3, 4}}, ints: map[string][]int64{"axes": {0, 2}},
			nodes: []*graph.Node{
				op("ReduceSum", []string{"r"}, []string{"a", "axes"}, nil),
				op("Mul", []string{"y"}, []string{"r", "r"}, nil),
			}, outputs: []string{"y"}},
		// Attention pooling: (softmax(w . out over time) * out).sum(1).
		opCase{name: "attention pooling", params: map[string][]int{"out": {2, 5, 3}, "w": {3, 1}}, ints: map[string][]int64{"axes": {1}},
			nodes: []*graph.Node{
				op("MatMul", []string{"s"}, []string{"out", "w"}, nil),
				op("Softmax", []string{"p"}, []string{"s"}, map[string]graph.Attr{"axis": aInt(1)}),
				op("Mul", []string{"m"}, []string{"p", "out"}, nil),
				op("ReduceSum", []string{"y"}, []string{"m", "axes"}, map[string]graph.Attr{"keepdims": aInt(0)}),
			}, outputs: []string{"y"}},
		red("ReduceMean", []int64{-1}, 1, false),
		red("ReduceMax", []int64{1}, 0, false),
		red("ReduceMin", []int64{0, 2}, 1, false),
		red("ReduceSumSquare", []int64{2}, 0, false),
		red("ReduceL1", []int64{1, 2}, 0, false),
		red("ReduceL2", []int64{1}, 1, false),
		red("ReduceLogSum", []int64{0}, 0, true),
		red("ReduceLogSumExp", []int64{2}, 1, false),
	)
	cases = append(cases,
		opCase{name: "LayerNormalization with Mean and InvStdDev", params: map[string][]int{"x": {2, 3, 4}, "s": {4}, "b": {4}},
			nodes: []*graph.Node{
				op("LayerNormalization", []string{"l", "m", "v"}, []string{"x", "s", "b"}, map[string]graph.Attr{"epsilon": aFloat(0.01)}),
				op("Mul", []string{"y"}, []string{"l", "l"}, nil),
			}, outputs: []string{"y", "m", "v"}},
		opCase{name: "LayerNormalization two axes, no bias", params: map[string][]int{"x": {2, 3, 4}, "s": {3, 4}},
			nodes: []*graph.Node{
				op("LayerNormalization", []string{"l"}, []string{"x", "s"}, map[string]graph.Attr{"axis": aInt(1)}),
				op("Mul", []string{"y"}, []string{"l", "l"}, nil),
			}, outputs: []string{"y"}},
		// The running mean and variance are constants by rule; x, scale and
		// bias are parameters.
		opCase{name: "BatchNormalization", params: map[string][]int{"x": {2, 3, 4}, "s": {3}, "b": {3}, "mean": {3}, "var": {3}}, pos: []string{"var"},
			nodes: []*graph.Node{
				op("BatchNormalization", []string{"n"}, []string{"x", "s", "b", "mean", "var"}, map[string]graph.Attr{"epsilon": aFloat(0.01)}),
				op("Mul", []string{"y"}, []string{"n", "n"}, nil),
			}, outputs: []string{"y"}},
		opCase{name: "InstanceNormalization", params: map[string][]int{"x": {2, 3, 2, 2}, "s": {3}, "b": {3}},
			nodes: []*graph.Node{
				op("InstanceNormalization", []string{"n"}, []string{"x", "s", "b"}, nil),
				op("Mul", []string{"y"}, []string{"n", "n"}, nil),
			}, outputs: []string{"y"}},
	)
	ints := func(v ...int64) graph.Attr { return aInts(v...) }
	cases = append(cases,
		opCase{name: "Conv 1-D, groups, bias, padding, stride, dilation", params: map[string][]int{"x": {2, 4, 7}, "w": {6, 2, 3}, "b": {6}},
			nodes: []*graph.Node{
				op("Conv", []string{"c"}, []string{"x", "w", "b"}, map[string]graph.Attr{"group": aInt(2), "pads": ints(2, 1), "strides": ints(2), "dilations": ints(2)}),
				op("Tanh", []string{"y"}, []string{"c"}, nil),
			}, outputs: []string{"y"}},
		// CNN-LSTM front end: x.permute(0, 2, 1) -> Conv1d -> LSTM input.
		opCase{name: "Conv 1-D after a transpose", params: map[string][]int{"x": {2, 5, 3}, "w": {4, 3, 2}, "b": {4}},
			nodes: []*graph.Node{
				op("Transpose", []string{"t"}, []string{"x"}, map[string]graph.Attr{"perm": ints(0, 2, 1)}),
				op("Conv", []string{"c"}, []string{"t", "w", "b"}, map[string]graph.Attr{"pads": ints(1, 0)}),
				op("Transpose", []string{"u"}, []string{"c"}, map[string]graph.Attr{"perm": ints(0, 2, 1)}),
				op("Mul", []string{"y"}, []string{"u", "u"}, nil),
			}, outputs: []string{"y"}},
		opCase{name: "Conv 2-D, auto_pad SAME_UPPER, no bias", params: map[string][]int{"x": {1, 2, 4, 5}, "w": {3, 2, 3, 2}},
			nodes: []*graph.Node{
				op("Conv", []string{"c"}, []string{"x", "w"}, map[string]graph.Attr{"auto_pad": aStr("SAME_UPPER"), "strides": ints(2, 1)}),
				op("Mul", []string{"y"}, []string{"c", "c"}, nil),
			}, outputs: []string{"y"}},
		opCase{name: "AveragePool 2-D with padding, MaxPool 1-D ceil_mode", params: map[string][]int{"x": {2, 2, 4, 5}, "z": {2, 3, 7}},
			nodes: []*graph.Node{
				op("AveragePool", []string{"a"}, []string{"x"}, map[string]graph.Attr{"kernel_shape": ints(3, 2), "pads": ints(1, 0, 1, 1), "strides": ints(2, 2)}),
				op("Mul", []string{"y"}, []string{"a", "a"}, nil),
				op("MaxPool", []string{"m"}, []string{"z"}, map[string]graph.Attr{"kernel_shape": ints(2), "strides": ints(2), "ceil_mode": aInt(1)}),
				op("Mul", []string{"y2"}, []string{"m", "m"}, nil),
			}, outputs: []string{"y", "y2"}},
		opCase{name: "GlobalAveragePool GlobalMaxPool", params: map[string][]int{"x": {2, 3, 2, 3}},
			nodes: []*graph.Node{
				op("GlobalAveragePool", []string{"a"}, []string{"x"}, nil),
				op("GlobalMaxPool", []string{"m"}, []string{"x"}, nil),
				op("Mul", []string{"y"}, []string{"a", "m"}, nil),
			}, outputs: []string{"y"}},
		opCase{name: "Pad constant with a parameter value, reflect, edge, wrap", params: map[string][]int{"x": {2, 3}, "v": {}},
			ints: map[string][]int64{"p1": {1, 2, 0, 1}, "p2": {0, 2, 1, 2}, "p3": {1, 0, 2, -1}},
			nodes: []*graph.Node{
				op("Pad", []string{"a"}, []string{"x", "p1", "v"}, nil),
				op("Pad", []string{"b"}, []string{"x", "p2"}, map[string]graph.Attr{"mode": aStr("reflect")}),
				op("Pad", []string{"c"}, []string{"x", "p3"}, map[string]graph.Attr{"mode": aStr("edge")}),
				op("Pad", []string{"d"}, []string{"x", "p2"}, map[string]graph.Attr{"mode": aStr("wrap")}),
				op("Mul", []string{"y"}, []string{"a", "a"}, nil),
				op("Mul", []string{"y2"}, []string{"b", "d"}, nil),
				op("Mul", []string{"y3"}, []string{"c", "c"}, nil),
			}, outputs: []string{"y", "y2", "y3"}},
		opCase{name: "Trilu upper and lower, batched, with k", params: map[string][]int{"x": {2, 3, 4}}, ints: map[string][]int64{"k": {1}, "km": {-1}},
			nodes: []*graph.Node{
				op("Trilu", []string{"u"}, []string{"x", "k"}, nil),
				op("Trilu", []string{"l"}, []string{"x", "km"}, map[string]graph.Attr{"upper": aInt(0)}),
				op("Trilu", []string{"d"}, []string{"x"}, nil),
				op("Mul", []string{"y"}, []string{"u", "l"}, nil),
				op("Mul", []string{"y2"}, []string{"d", "x"}, nil),
			}, outputs: []string{"y", "y2"}},
		opCase{name: "Tile", params: map[string][]int{"x": {2, 3}}, ints: map[string][]int64{"r": {2, 3}},
			nodes: []*graph.Node{
				op("Tile", []string{"t"}, []string{"x", "r"}, nil),
				op("Mul", []string{"y"}, []string{"t", "t"}, nil),
			}, outputs: []string{"y"}},
	)
	eq := func(e string) map[string]graph.Attr { return map[string]graph.Attr{"equation": aStr(e)} }
	cases = append(cases,
		opCase{name: "CumSum, exclusive and reverse", params: map[string][]int{"x": {2, 4, 3}}, ints: map[string][]int64{"ax": {1}, "last": {-1}},
			nodes: []*graph.Node{
				op("CumSum", []string{"a"}, []string{"x", "ax"}, nil),
				op("CumSum", []string{"b"}, []string{"x", "last"}, map[string]graph.Attr{"exclusive": aInt(1), "reverse": aInt(1)}),
				op("Mul", []string{"y"}, []string{"a", "x"}, nil),
				op("Mul", []string{"y2"}, []string{"b", "b"}, nil),
			}, outputs: []string{"y", "y2"}},
		opCase{name: "Einsum batch matmul, contraction, transposed output, summed-out letter", params: map[string][]int{"a": {2, 3, 4}, "b": {2, 4, 5}, "w": {4, 3}, "v": {5, 2}},
			nodes: []*graph.Node{
				op("Einsum", []string{"p"}, []string{"a", "b"}, eq("bij, bjk -> bik")),
				op("Einsum", []string{"q"}, []string{"a", "w"}, eq("bij,jk->bki")),
				op("Einsum", []string{"r"}, []string{"b", "v"}, eq("bjk,kl")), // implicit output: bjl
				op("Einsum", []string{"s"}, []string{"a"}, eq("bij->ji")),
				op("Mul", []string{"y"}, []string{"p", "p"}, nil),
				op("Mul", []string{"y2"}, []string{"q", "q"}, nil),
				op("Mul", []string{"y3"}, []string{"r", "r"}, nil),
				op("Mul", []string{"y4"}, []string{"s", "s"}, nil),
			}, outputs: []string{"y", "y2", "y3", "y4"}},
		opCase{name: "GatherElements OneHot", params: map[string][]int{"x": {3, 4}}, ints: map[string][]int64{"idx": {2, 0, 1, -1, 0, 3}, "oh": {1, 3, 0}, "depth": {4}, "vals": {0, 2}},
			nodes: []*graph.Node{
				op("Reshape", []string{"i2"}, []string{"idx", "shape"}, nil),
				op("GatherElements", []string{"g"}, []string{"x", "i2"}, map[string]graph.Attr{"axis": aInt(1)}),
				op("OneHot", []string{"h"}, []string{"oh", "depth", "vals"}, nil),
				op("Mul", []string{"y"}, []string{"g", "g"}, nil),
				op("Mul", []string{"y2"}, []string{"h", "x"}, nil),
			}, outputs: []string{"y", "y2"}},
	)
	cases[len(cases)-1].ints["shape"] = []int64{3, 2}
	return cases
}

// TestBatchNormStatisticsAreConstants checks that BatchNormalization's
// running mean and variance are not parameters (they are statistics of
// the training data), while its scale and bias are.
func TestBatchNormStatisticsAreConstants(t *testing.T) {
	init := map[string]*graph.Tensor{
		"s":    graph.NewFloat([]int{2}, []float64{1, 2}),
		"b":    graph.NewFloat([]int{2}, []float64{0.5, -0.5}),
		"mean": graph.NewFloat([]int{2}, []float64{0.1, 0.2}),
		"var":  graph.NewFloat([]int{2}, []float64{4, 9}),
	}
	order := []string{"mean", "s", "var", "b"}
	nodes := []*graph.Node{op("BatchNormalization", []string{"y"}, []string{"x", "s", "b", "mean", "var"}, map[string]graph.Attr{"epsilon": aFloat(0)})}
	g, err := graph.New(15, []graph.ValueInfo{{Name: "x", Elem: graph.ElemDouble}}, []graph.ValueInfo{{Name: "y", Elem: graph.ElemDouble}}, nodes, init, order)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range g.Params() {
		names = append(names, p.Name)
	}
	if want := []string{"s", "b"}; !slices.Equal(names, want) {
		t.Errorf("parameters %v, want %v", names, want)
	}
	// (x - mean) / sqrt(var) * s + b for x = [1, 1] per channel.
	out, err := g.Run(nil, []*graph.Tensor{graph.NewFloat([]int{1, 2, 1}, []float64{1, 1})})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{(1-0.1)/2*1 + 0.5, (1-0.2)/3*2 - 0.5}
	for i, w := range want {
		if math.Abs(out[0].F[i]-w) > 1e-15 {
			t.Errorf("y[%d] = %v, want %v", i, out[0].F[i], w)
		}
	}
}

// TestIntegerShapeOps checks that the new operators fold integer shape
// arithmetic at compile time, keeping integers: from Shape(a) = [2, 3],
// Max, Min, Equal, Where, Not, ReduceSum, ReduceMax, CumSum, Clip, Tile and
// Pad give the values worked out by hand.
func TestIntegerShapeOps(t *testing.T) {
	ints := map[string][]int64{"ones": {1, 1}, "nines": {9, 9}, "two": {2, 0}, "ax": {0}, "rep": {2}, "pads": {1, 0}, "lo": {0}, "hi": {2}}
	init := map[string]*graph.Tensor{"a": graph.NewFloat([]int{2, 3}, nil)}
	order := []string{"a"}
	for k, v := range ints {
		init[k] = graph.NewInt([]int{len(v)}, v)
		if k == "ax" || k == "lo" || k == "hi" {
			init[k] = graph.NewInt(nil, v)
		}
	}
	nodes := []*graph.Node{
		op("Shape", []string{"s"}, []string{"a"}, nil),
		op("Max", []string{"max"}, []string{"s", "ones", "two"}, nil),                                // [2, 3]
		op("Min", []string{"min"}, []string{"s", "two"}, nil),                                        // [2, 0]
		op("Equal", []string{"eq"}, []string{"s", "two"}, nil),                                       // [1, 0]
		op("Not", []string{"not"}, []string{"eq"}, nil),                                              // [0, 1]
		op("Where", []string{"w"}, []string{"eq", "nines", "s"}, nil),                                // [9, 3]
		op("ReduceSum", []string{"sum"}, []string{"s"}, nil),                                         // [5]
		op("ReduceMax", []string{"rmax"}, []string{"s"}, map[string]graph.Attr{"keepdims": aInt(0)}), // 3
		op("CumSum", []string{"cs"}, []string{"s", "ax"}, nil),                                       // [2, 5]
		op("Clip", []string{"cl"}, []string{"s", "lo", "hi"}, nil),                                   // [2, 2]
		op("Tile", []string{"ti"}, []string{"two", "rep"}, nil),                                      // [2, 0, 2, 0]
		op("Pad", []string{"pa"}, []string{"s", "pads"}, nil),                                        // [0, 2, 3]
		op("Mul", []string{"y"}, []string{"a", "a"}, nil),
	}
	outNames := []string{"max", "min", "eq", "not", "w", "sum", "rmax", "cs", "cl", "ti", "pa", "y"}
	want := [][]int64{{2, 3}, {2, 0}, {1, 0}, {0, 1}, {9, 3}, {5}, {3}, {2, 5}, {2, 2}, {2, 0, 2, 0}, {0, 2, 3}}
	var outs []graph.ValueInfo
	for _, o := range outNames {
		outs = append(outs, graph.ValueInfo{Name: o})
	}
	g, err := graph.New(17, nil, outs, nodes, init, order)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Run(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got[i].DType != graph.Int || !slices.Equal(got[i].I, w) {
			t.Errorf("%s = %v %v, want int %v", outNames[i], got[i].DType, got[i].Int64s(), w)
		}
	}
}
