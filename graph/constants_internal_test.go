package graph

import (
	"strings"
	"testing"
)

// TestConstantRules builds graphs by hand: the running statistics of
// BatchNormalization are constants, a learned scale after a non-affine
// node stays a parameter, and a Gemm with its own bias leaves every
// rescaling buffer after it constant.
func TestConstantRules(t *testing.T) {
	f := func(shape ...int) *Tensor { return NewFloat(shape, make([]float64, numel(shape))) }
	build := func(nodes []*Node, init map[string]*Tensor, order []string) *Graph {
		g := &Graph{Outputs: []ValueInfo{{Name: "y"}}, Nodes: nodes, Init: init, InitOrder: order}
		g.collectParams()
		return g
	}
	reasons := func(g *Graph) map[string]string {
		m := map[string]string{}
		for _, c := range g.Constants() {
			m[c.Name] = c.Reason
		}
		return m
	}

	// BatchNormalization(x, scale, bias, mean, var) then MatMul.
	bn := build([]*Node{
		{OpType: "BatchNormalization", Name: "bn", Inputs: []string{"x", "s", "b", "m", "v"}, Outputs: []string{"h"}},
		{OpType: "MatMul", Name: "fc", Inputs: []string{"h", "w"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"s": f(3), "b": f(3), "m": f(3), "v": f(3), "w": f(3, 1)}, []string{"s", "b", "m", "v", "w"})
	r := reasons(bn)
	if !strings.Contains(r["m"], "running mean of BatchNormalization") || !strings.Contains(r["v"], "running variance") {
		t.Errorf("BatchNormalization statistics: %v", r)
	}
	if _, ok := r["s"]; ok {
		t.Errorf("scale taken as a constant: %v", r)
	}

	// tanh(x) * a: a learned scale, not after an affine layer.
	tanh := build([]*Node{
		{OpType: "Tanh", Inputs: []string{"x"}, Outputs: []string{"h"}},
		{OpType: "Mul", Inputs: []string{"h", "a"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"a": f(1)}, []string{"a"})
	if len(tanh.Params()) != 1 || len(tanh.Constants()) != 0 {
		t.Errorf("tanh * a: params %v, constants %v", tanh.Params(), tanh.Constants())
	}

	// Gemm(x, W, c) - mean, / std: both constants, the Gemm's own C a
	// parameter.
	gemm := build([]*Node{
		{OpType: "Gemm", Name: "fc", Inputs: []string{"x", "w", "c"}, Outputs: []string{"z"}},
		{OpType: "Sub", Inputs: []string{"z", "mean"}, Outputs: []string{"u"}},
		{OpType: "Div", Inputs: []string{"u", "std"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"w": f(4, 2), "c": f(2), "mean": f(1, 2), "std": f(2)}, []string{"w", "c", "mean", "std"})
	r = reasons(gemm)
	if len(r) != 2 || !strings.Contains(r["mean"], `Gemm node "fc"`) || r["std"] == "" || len(gemm.Params()) != 2 {
		t.Errorf("Gemm rescaled: constants %v, params %v", r, gemm.Params())
	}

	// A buffer of one value per row (not per column) is not a rescaler.
	rows := build([]*Node{
		{OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"z"}},
		{OpType: "Add", Inputs: []string{"z", "b"}, Outputs: []string{"u"}},
		{OpType: "Mul", Inputs: []string{"u", "s"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"w": f(4, 2), "b": f(2), "s": f(5, 1)}, []string{"w", "b", "s"})
	if len(rows.Constants()) != 0 {
		t.Errorf("per-row scale taken as a constant: %v", rows.Constants())
	}
}
