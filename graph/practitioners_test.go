package graph_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// practitionerModels loads every fixture of testdata/practitioners with its
// graph and inputs.
func practitionerModels(t *testing.T) (names []string, fxs []*onnxtest.Fixture, gs []*graph.Graph, ins [][]*graph.Tensor) {
	dir := filepath.Join("testdata", "practitioners")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("%d fixtures in %s, want 6", len(files), dir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		fx, err := onnxtest.ReadFixture(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := fx.Load()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		inputs, err := fx.InputsFor(g)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names, fxs, gs, ins = append(names, name), append(fxs, fx), append(gs, g), append(ins, inputs)
	}
	return names, fxs, gs, ins
}

// TestPractitionerModels runs the models of testdata/practitioners (the
// shapes practitioners give recurrent forecasters: CNN-LSTM front ends,
// BatchNorm1d on the inputs, LayerNorm at opsets 14 and 17, GELU,
// attention pooling, Softplus and clamped log-variance heads, and two
// operator probes; made by export.py there) and compares with PyTorch's
// float64 outputs to 1e-10. The references compute the function
// the graph holds, with its float32 constants (export.py's doc says which).
func TestPractitionerModels(t *testing.T) {
	names, fxs, gs, ins := practitionerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			got, err := gs[k].Run(nil, ins[k])
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range fxs[k].Outputs {
				compare(t, o.Name, got[i], o.Tensor(), 1e-10, 1e-10)
			}
		})
	}
}

// TestPractitionerModelsExamples checks per-example gradients through the
// new operators (Conv, BatchNormalization, LayerNormalization, attention
// pooling, the reduce, select and binary-function kernels): for every
// practitioner model, batched over its first axis, BackwardPerExample must
// give each example the gradient that Backward gives with the output
// cotangent restricted to that example's outputs.
func TestPractitionerModelsExamples(t *testing.T) {
	names, _, gs, ins := practitionerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) { checkExamplesMasked(t, gs[k], ins[k], 0) })
	}
}

// checkExamplesMasked checks BackwardPerExample on model g, batched over
// axis axis of its first input: each example's gradient must be the one
// Backward gives with a random output cotangent restricted to that
// example's outputs (the same axis of the output indexes the examples).
func checkExamplesMasked(t *testing.T, g *graph.Graph, inputs []*graph.Tensor, axis int) {
	t.Helper()
	p, err := g.Compile(inputs)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.PerExample([]int{axis})
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	s := p.NewState()
	outs, err := s.Forward(theta, inputs)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	seed := graph.NewFloat(outs[0].Shape, nil)
	for i := range seed.F {
		seed.F[i] = r.NormFloat64()
	}
	N := inputs[0].Shape[axis]
	grads := make([][]float64, N)
	for e := range grads {
		grads[e] = make([]float64, len(theta))
	}
	if err := s.BackwardPerExample(ex, []*graph.Tensor{seed}, grads); err != nil {
		t.Fatal(err)
	}
	ids := ex.Output(0)
	inner := 1 // elements after the output's example axis
	for _, d := range outs[0].Shape[axis+1:] {
		inner *= d
	}
	for i, id := range ids {
		if want := i / inner % N; int(id) != want {
			t.Fatalf("output element %d belongs to example %d, want %d", i, id, want)
		}
	}
	for e := 0; e < N; e++ {
		masked := graph.NewFloat(seed.Shape, nil)
		for i, id := range ids {
			if int(id) == e {
				masked.F[i] = seed.F[i]
			}
		}
		want := make([]float64, len(theta))
		if err := s.Backward([]*graph.Tensor{masked}, want); err != nil {
			t.Fatal(err)
		}
		for j, w := range want {
			if math.Abs(grads[e][j]-w) > 1e-10*math.Max(1, math.Abs(w)) {
				t.Fatalf("example %d, parameter %d: %.12g, masked backward %.12g", e, j, grads[e][j], w)
			}
		}
	}
}

// TestPractitionerModelsDerivatives checks the tangent, backward and
// second-order rules of every practitioner model against central
// differences, as TestOperatorDerivatives does for single operators.
func TestPractitionerModelsDerivatives(t *testing.T) {
	names, _, gs, ins := practitionerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			checkDerivatives(t, gs[k], ins[k], rand.New(rand.NewPCG(uint64(k), 19)))
		})
	}
}

// TestExamplesWeightsFromOperators checks per-example gradients when the
// weights are computed from the parameters with the operator families'
// kernels: weight normalisation (ReduceL2, a reduction), Max and Clip
// with parameter bounds (binary functions), Pad (a padded map) and Where
// (selection), against central differences (checkExamples).
func TestExamplesWeightsFromOperators(t *testing.T) {
	const N = 4
	attrs := func(kv ...any) map[string]graph.Attr {
		m := map[string]graph.Attr{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(graph.Attr)
		}
		return m
	}
	nodes := []*graph.Node{
		op("ReduceL2", []string{"norm"}, []string{"W"}, attrs("axes", aInts(0), "keepdims", aInt(1))),
		op("Div", []string{"Wn"}, []string{"W", "norm"}, nil),
		op("Max", []string{"Wm"}, []string{"Wn", "c"}, nil),
		op("Constant", []string{"pads"}, nil, attrs("value_ints", aInts(1, 0, 0, 0))),
		op("Pad", []string{"Wp"}, []string{"Wm", "pads"}, attrs("mode", aStr("reflect"))), // [4, 2]
		op("Constant", []string{"cond"}, nil, attrs("value", graph.Attr{Kind: graph.AttrTensor, T: graph.NewInt([]int{2}, []int64{1, 0})})),
		op("Where", []string{"Ww"}, []string{"cond", "Wp", "V"}, nil),
		op("ReduceMax", []string{"vmax"}, []string{"V"}, attrs("keepdims", aInt(0))),
		op("Clip", []string{"Wc"}, []string{"Ww", "", "vmax"}, nil),
		op("MatMul", []string{"h"}, []string{"x", "Wc"}, nil),
		op("Tanh", []string{"y"}, []string{"h"}, nil),
	}
	g, x := smallGraph(t, []int{N, 4}, map[string][]int{"W": {3, 2}, "c": {2}, "V": {1, 2}}, nodes...)
	checkExamples(t, g, x, false)
}
