package modelio

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// zooInputs is the zoo of static covariates, external data and the other
// patterns of onnx/testdata/zoo-inputs (make_zoo_inputs.py there).
var zooInputs = filepath.Join("..", "..", "onnx", "testdata", "zoo-inputs")

// staticModel loads the GRU with static covariates (x [batch, time, 2],
// static [batch, 2]) and its training data (x1, x2, age, sex).
func staticModel(t *testing.T) (*graph.Graph, *blocks.Dataset) {
	t.Helper()
	g, _, err := onnx.LoadOutput(filepath.Join(zooInputs, "gru_static_op14.onnx"), "")
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(filepath.Join(zooInputs, "train_static.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, train
}

// TestStaticInputs checks that an input [batch, S] takes one value per
// sequence from the S columns named for it, in their order, while the
// input of features takes the other columns per step; and that the
// example axis of the static input is its first in either layout.
func TestStaticInputs(t *testing.T) {
	g, train := staticModel(t)
	if S, ok := StaticWidth(g, g.Inputs[1]); !ok || S != 2 {
		t.Fatalf("StaticWidth(static) = %d, %v, want 2, true", S, ok)
	}
	if _, ok := StaticWidth(g, g.Inputs[0]); ok {
		t.Fatal("the input of features is taken as static")
	}
	m, err := New(g, Config{Layout: graph.BatchFirst, Inputs: map[string][]string{"static": {"sex", "age"}}}, train.Features)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(m), "x=x1,x2 static=sex,age"; got != want {
		t.Fatalf("inputs %s, want %s", got, want)
	}
	if d := m.Describe(); !d[1].Static || d[0].Static {
		t.Fatalf("Describe: static %v, %v; want false, true", d[0].Static, d[1].Static)
	}
	seqs := train.Seqs[:3]
	in, err := m.Inputs(seqs, 12, 12)
	if err != nil {
		t.Fatal(err)
	}
	age, sex := slicesIndex(train.Features, "age"), slicesIndex(train.Features, "sex")
	if got := in[1].Shape; len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("static input of shape %v, want [3 2]", got)
	}
	for b, s := range seqs {
		if in[1].F[2*b] != s.X[5][sex] || in[1].F[2*b+1] != s.X[7][age] {
			t.Errorf("sequence %d: static %v, want [%v %v]", b, in[1].F[2*b:2*b+2], s.X[0][sex], s.X[0][age])
		}
	}
	if got := in[0].Shape; got[2] != 2 {
		t.Fatalf("input of features of shape %v, want 2 features", got)
	}
	// A time-first model: its sequence inputs are batched on axis 1, its
	// static input on axis 0.
	tf := &IO{g: g, layout: graph.TimeFirst, fills: []inputFill{{rank: 3}, {rank: 2, static: true}}}
	if axes := tf.ExampleAxes(); axes[0] != 1 || axes[1] != 0 {
		t.Errorf("time-first example axes %v, want [1 0]", axes)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestStaticRefusals checks the messages: a column that varies within a
// sequence (naming the sequence, the column and the two lines), the wrong
// number of columns, a static input with no column named, and more than
// one column named for an input [batch, time].
func TestStaticRefusals(t *testing.T) {
	g, train := staticModel(t)
	c := Config{Layout: graph.BatchFirst, Inputs: map[string][]string{"static": {"age", "sex"}}}
	m, err := New(g, c, train.Features)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckLengths(train); err != nil {
		t.Fatalf("constant covariates refused: %v", err)
	}
	// Sequence s01's age changes at its fourth row (file line 2+12+3).
	age := slicesIndex(train.Features, "age")
	s := train.Seqs[1]
	row := append([]float64(nil), s.X[3]...)
	row[age]++
	s.X[3] = row
	err = m.CheckLengths(train)
	want := []string{`sequence "s01"`, `column "age"`, `line 14`, `line 17`, "varies within the sequence"}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("varying covariate: error %v, want it to say %q", err, w)
		}
	}
	if _, err := m.Inputs(train.Seqs[:2], 12, 12); err == nil || !strings.Contains(err.Error(), `column "age"`) {
		t.Errorf("Inputs of a varying covariate: %v", err)
	}
	for _, tc := range []struct {
		inputs map[string][]string
		want   string
	}{
		{map[string][]string{"static": {"age"}}, "takes 2 per-sequence values (static covariates), but 1 columns are named (age)"},
		{nil, "takes 2 per-sequence values (static covariates) and no column is named for it: name its columns"},
	} {
		if _, err := New(g, Config{Layout: graph.BatchFirst, Inputs: tc.inputs}, train.Features); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("inputs %v: error %v, want %q", tc.inputs, err, tc.want)
		}
	}
}

// TestStaticByColumnName checks that an input [batch, 1] named like a data
// column takes that column's value per sequence without being named, as
// an input [batch, time] does per step: y = x W + age.
func TestStaticByColumnName(t *testing.T) {
	dyn := func(name string) graph.Dim { return graph.Dim{Value: -1, Name: name} }
	inputs := []graph.ValueInfo{
		{Name: "x", Elem: graph.ElemFloat, Dims: []graph.Dim{dyn("batch"), dyn("time"), {Value: 2}}},
		{Name: "age", Elem: graph.ElemFloat, Dims: []graph.Dim{dyn("batch"), {Value: 1}}},
	}
	nodes := []*graph.Node{
		{Name: "u", OpType: "Unsqueeze", Inputs: []string{"age", "ax"}, Outputs: []string{"a"}},
		{Name: "m", OpType: "MatMul", Inputs: []string{"x", "W"}, Outputs: []string{"p"}},
		{Name: "add", OpType: "Add", Inputs: []string{"p", "a"}, Outputs: []string{"y"}},
	}
	init := map[string]*graph.Tensor{"W": graph.NewFloat([]int{2, 1}, []float64{1, 10}), "ax": graph.NewInt([]int{1}, []int64{1})}
	g, err := graph.New(14, inputs, []graph.ValueInfo{{Name: "y", Elem: graph.ElemFloat}}, nodes, init, []string{"W", "ax"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(g, Config{Layout: graph.BatchFirst}, []string{"x1", "age", "x2"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(m), "x=x1,x2 age=age"; got != want || !m.Describe()[1].Static {
		t.Fatalf("inputs %s (static %v), want %s", got, m.Describe()[1].Static, want)
	}
	seq := &blocks.Sequence{ID: "p1", X: [][]float64{{1, 60, 2}, {3, 60, 4}}}
	p, in, err := m.Program(1, 2, []*blocks.Sequence{seq})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.NewState().Forward(g.Theta(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].F; len(got) != 2 || got[0] != 1+20+60 || got[1] != 3+40+60 {
		t.Errorf("y = %v, want [81 103]", got)
	}
}
