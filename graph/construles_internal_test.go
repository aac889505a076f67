package graph

import (
	"math"
	"strings"
	"testing"
)

// TestExtraConstantRules builds graphs by hand for each rule of
// construles.go and for a look-alike of each that must stay a parameter.
func TestExtraConstantRules(t *testing.T) {
	vals := func(shape []int, v ...float64) *Tensor { return NewFloat(shape, v) }
	build := func(nodes []*Node, init map[string]*Tensor, order []string) *Graph {
		g := &Graph{Inputs: []ValueInfo{{Name: "x", Elem: ElemFloat}}, Outputs: []ValueInfo{{Name: "y"}}, Nodes: nodes, Init: init, InitOrder: order}
		g.collectParams()
		return g
	}
	check := func(what string, g *Graph, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for _, c := range g.Constants() {
			got[c.Name] = c.Reason
		}
		if len(got) != len(want) {
			t.Errorf("%s: constants %v, want %v", what, got, want)
		}
		for name, frag := range want {
			if !strings.Contains(got[name], frag) {
				t.Errorf("%s: %s is %q, want a reason saying %q", what, name, got[name], frag)
			}
		}
	}
	w := vals([]int{2, 2}, 0.31, -1.2, 0.7, 0.05)

	// (Cast(x) - mean) / std, then MatMul: mean and std are normalisers.
	check("standardised input", build([]*Node{
		{OpType: "Cast", Inputs: []string{"x"}, Outputs: []string{"c"}},
		{OpType: "Sub", Name: "sub", Inputs: []string{"c", "mean"}, Outputs: []string{"u"}},
		{OpType: "Div", Name: "div", Inputs: []string{"u", "std"}, Outputs: []string{"z"}},
		{OpType: "MatMul", Inputs: []string{"z", "w"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"mean": vals([]int{2}, 60.3, 0.51), "std": vals([]int{1, 2}, 9.7, 0.21), "w": w}, []string{"mean", "std", "w"}),
		map[string]string{"mean": `normalises graph input "x" (Sub node "sub")`, "std": `(Div node "div")`})

	// mean / x and a statistic used twice are not normalisers.
	check("not a normaliser", build([]*Node{
		{OpType: "Div", Inputs: []string{"s", "x"}, Outputs: []string{"u"}},
		{OpType: "Sub", Inputs: []string{"u", "m"}, Outputs: []string{"v"}},
		{OpType: "Tanh", Inputs: []string{"v"}, Outputs: []string{"h"}},
		{OpType: "Add", Inputs: []string{"h", "m"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"s": vals([]int{2}, 0.3, 0.7), "m": vals([]int{2}, 0.1, 0.2)}, []string{"s", "m"}), nil)

	// y = x w + b alone, and (x - m) fed to Tanh: a model, not a
	// normaliser before a trained linear layer.
	check("affine model", build([]*Node{
		{OpType: "Mul", Inputs: []string{"x", "w1"}, Outputs: []string{"u"}},
		{OpType: "Add", Inputs: []string{"u", "b1"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"w1": vals([]int{1}, 0.8), "b1": vals([]int{1}, 0.1)}, []string{"w1", "b1"}), nil)
	check("before tanh", build([]*Node{
		{OpType: "Sub", Inputs: []string{"x", "m"}, Outputs: []string{"u"}},
		{OpType: "Tanh", Inputs: []string{"u"}, Outputs: []string{"h"}},
		{OpType: "MatMul", Inputs: []string{"h", "w"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"m": vals([]int{2}, 0.3, 0.1), "w": w}, []string{"m", "w"}), nil)

	// Scores + mask, Mul by a folded 1/sqrt(8), + a sinusoidal table.
	half := 1 / math.Sqrt(8)
	pe := []float64{0, 1, 0, 1, math.Sin(1), math.Cos(1), math.Sin(0.01), math.Cos(0.01)}
	check("mask, scalar, table", build([]*Node{
		{OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"s"}},
		{OpType: "Mul", Inputs: []string{"s", "k"}, Outputs: []string{"a"}},
		{OpType: "Add", Inputs: []string{"a", "mask"}, Outputs: []string{"b"}},
		{OpType: "Add", Inputs: []string{"b", "pe"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"w": w, "k": vals(nil, float64(float32(half))), "mask": vals([]int{2, 2}, 0, math.Inf(-1), 0, 0), "pe": vals([]int{2, 1, 4}, pe...)},
		[]string{"w", "k", "mask", "pe"}),
		map[string]string{"k": "a folded scalar", "mask": "a mask", "pe": "a sinusoidal position table"})

	// Look-alikes that training produces stay parameters: a scalar of
	// shape [1] holding 1, a scalar 0.37 of rank 0, a table whose first
	// row is not exactly 0 and 1, a tensor of 0 and a finite value.
	check("look-alikes", build([]*Node{
		{OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"s"}},
		{OpType: "Mul", Inputs: []string{"s", "one"}, Outputs: []string{"a"}},
		{OpType: "Mul", Inputs: []string{"a", "k"}, Outputs: []string{"b"}},
		{OpType: "Add", Inputs: []string{"b", "pe"}, Outputs: []string{"c"}},
		{OpType: "Add", Inputs: []string{"c", "z"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"w": w, "one": vals([]int{1}, 1), "k": vals(nil, 0.37), "pe": vals([]int{2, 1, 4}, 0, 1, 0.001, 1, 0.5, 0.5, 0.1, 0.9),
		"z": vals([]int{2, 2}, 0, 0.25, 0, 0)}, []string{"w", "one", "k", "pe", "z"}), nil)

	// A buffer named as PyTorch names running statistics.
	check("buffer name", build([]*Node{
		{OpType: "Tanh", Inputs: []string{"x"}, Outputs: []string{"h"}},
		{OpType: "Sub", Inputs: []string{"h", "norm.running_mean"}, Outputs: []string{"y"}},
	}, map[string]*Tensor{"norm.running_mean": vals([]int{2}, 0.3, -0.2)}, []string{"norm.running_mean"}),
		map[string]string{"norm.running_mean": "PyTorch names only buffers running_mean"})
}

func TestRoundValue(t *testing.T) {
	for _, v := range []float64{0, 1, -2, 1e6, 1e-5, float64(float32(1e-5)), 0.5, math.Sqrt(64), float64(float32(1 / math.Sqrt(32))), math.Sqrt(512)} {
		if !roundValue(v) {
			t.Errorf("%g is not taken as round", v)
		}
	}
	for _, v := range []float64{0.37, float64(float32(0.9995)), 1.0001, 3e-5, math.Pi, math.NaN(), math.Inf(1)} {
		if roundValue(v) {
			t.Errorf("%g is taken as round", v)
		}
	}
}

// TestParamPatternNegation: "!" excludes; exclusions alone keep the rest.
func TestParamPatternNegation(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		keep    string // the kept names among a, mean, std, head.w, head.b
	}{
		{"!mean,!std", "a head.w head.b"},
		{"head.*,!head.b", "head.w"},
		{"*", "a mean std head.w head.b"},
		{"!*", ""},
	} {
		keep, err := ParamPattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range []string{"a", "mean", "std", "head.w", "head.b"} {
			if keep(n) {
				got = append(got, n)
			}
		}
		if strings.Join(got, " ") != tc.keep {
			t.Errorf("%q keeps %v, want %s", tc.pattern, got, tc.keep)
		}
	}
	if _, err := ParamPattern("!, ,"); err == nil {
		t.Error("an empty pattern is accepted")
	}
}
