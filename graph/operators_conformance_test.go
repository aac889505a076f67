package graph_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// operatorsFolded lists the cases whose float graph inputs set an output
// shape (Range's start, limit and delta; OneHot's depth). The compiler reads
// only the shapes of float inputs, so these run with those inputs made
// Constant nodes, as an exporter writes them when the shape is fixed.
var operatorsFolded = map[string][]string{
	"test_onehot_without_axis":             {"depth"},
	"test_range_float_type_positive_delta": {"start", "limit", "delta"},
}

// runCaseFolding is runCase with the graph inputs named in fold turned
// into Constant nodes holding the case's values for them.
func runCaseFolding(t *testing.T, dir string, fold []string) {
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Decode(data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	ins, outs := readDataSet(t, filepath.Join(dir, "test_data_set_0"))
	var keep []graph.ValueInfo
	var inputs []*graph.Tensor
	var consts []*graph.Node
	for i, in := range g.Inputs {
		v := ins.take(in.Name, i)
		if v == nil {
			t.Fatalf("no data for input %q", in.Name)
		}
		if slices.Contains(fold, in.Name) {
			consts = append(consts, &graph.Node{Name: in.Name, OpType: "Constant", Outputs: []string{in.Name},
				Attrs: map[string]graph.Attr{"value": {Kind: graph.AttrTensor, T: v}}})
			continue
		}
		keep = append(keep, in)
		inputs = append(inputs, v)
	}
	if len(consts) > 0 {
		if g, err = graph.New(g.Opset, keep, g.Outputs, append(consts, g.Nodes...), g.Init, g.InitOrder); err != nil {
			t.Fatal(err)
		}
	}
	got, err := g.Run(nil, inputs)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for i, o := range g.Outputs {
		want := outs.take(o.Name, i)
		if want == nil {
			t.Fatalf("no reference for output %q", o.Name)
		}
		compare(t, o.Name, got[i], want, 1e-5, 1e-5)
	}
}

// TestOperatorConformance runs the ONNX backend node tests in
// testdata/onnx-operators (the operators practitioners' exports of
// recurrent models use beyond RNN/LSTM/GRU: elementwise functions,
// reductions, normalisation, convolution and pooling, Einsum, ...; see its
// README for provenance) like TestConformance: forward values against the
// expected outputs, max abs error <= 1e-5 + 1e-5*|expected|, NaN equal to
// NaN.
func TestOperatorConformance(t *testing.T) {
	runSuite(t, filepath.Join("testdata", "onnx-operators"), 102)
}

// runSuite runs every case directory of dir (want of them), folding
// operatorsFolded.
func runSuite(t *testing.T, dir string, want int) {
	cases, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		n++
		name := c.Name()
		t.Run(name, func(t *testing.T) {
			runCaseFolding(t, filepath.Join(dir, name), operatorsFolded[name])
		})
	}
	if n != want {
		t.Errorf("%s: %d cases, want %d", dir, n, want)
	}
}

// TestOperatorProbes runs the cases of testdata/operator-probes (made by
// make.py there with numpy as the reference: Pad modes and negative pads,
// CumSum's exclusive and reverse forms, Einsum equations, MaxPool with
// pads and dilations, GatherElements with negative indices, OneHot on an
// inner axis) like TestConformance.
func TestOperatorProbes(t *testing.T) {
	runSuite(t, filepath.Join("testdata", "operator-probes"), 16)
}
