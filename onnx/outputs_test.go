package onnx_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestLoadOutputPrunes loads a Gaussian head whose log-variance output
// goes through Clip: the forecast alone loads, without the Clip and the
// other output, and matches PyTorch's float64 mean.
func TestLoadOutputPrunes(t *testing.T) {
	const path = "testdata/outputs/gauss_two.onnx"
	// Load keeps both outputs (it refused the model while Clip was not
	// implemented).
	if g, err := onnx.Load(path); err != nil && !errors.Is(err, graph.ErrUnsupportedOp) {
		t.Fatalf("Load: %v", err)
	} else if err == nil && len(g.Outputs) != 2 {
		t.Fatalf("Load: outputs %v, want y and logvar", g.Outputs)
	}
	g, pr, err := onnx.LoadOutput(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Outputs) != 1 || g.Outputs[0].Name != "y" {
		t.Fatalf("outputs %v, want y", g.Outputs)
	}
	if len(pr.Outputs) != 1 || pr.Outputs[0].Name != "logvar" || pr.Nodes == 0 {
		t.Errorf("pruned %+v, want output logvar and its nodes", pr)
	}
	for _, n := range g.Nodes {
		if n.OpType == "Clip" {
			t.Errorf("node %q (Clip) kept", n.Label())
		}
	}
	var fx struct {
		Inputs []struct {
			Shape []int
			Data  []float64
		}
		Outputs []struct {
			Name  string
			Shape []int
			Data  []float64
		}
	}
	b, err := os.ReadFile("testdata/outputs/gauss_two.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	outs, err := g.Run(nil, []*graph.Tensor{graph.NewFloat(fx.Inputs[0].Shape, fx.Inputs[0].Data)})
	if err != nil {
		t.Fatal(err)
	}
	want := fx.Outputs[0]
	if want.Name != "y" || len(outs[0].F) != len(want.Data) {
		t.Fatalf("got %d values, reference %s has %d", len(outs[0].F), want.Name, len(want.Data))
	}
	for i, w := range want.Data {
		if d := math.Abs(outs[0].F[i] - w); d > 1e-10 {
			t.Fatalf("y[%d] = %.15g, PyTorch %.15g", i, outs[0].F[i], w)
		}
	}
	if _, _, err := onnx.LoadOutput(path, "z"); err == nil || !strings.Contains(err.Error(), `"y", "logvar"`) {
		t.Errorf("unknown output: %v, want the outputs listed", err)
	}
}
