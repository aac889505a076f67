package graph_test

import (
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// TestRewritesApply checks that the paper-size batch-first RNN loses its
// Concat of hidden states and that the Transpose before the output layer
// moves the layer's 1-column result instead of the 20-column states
// (values are checked against ONNX Runtime and PyTorch elsewhere; this
// catches a rewrite that silently stops applying).
func TestRewritesApply(t *testing.T) {
	g, in := paperBatch(t, 7, 10)
	p, err := g.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	n := graph.KernelCounts(p)
	if n["concatK"] != 0 {
		t.Errorf("%d Concat steps left, want 0 (kernels %v)", n["concatK"], n)
	}
	if n["mapK"] != 4 {
		t.Errorf("%d data-movement steps, want 4: input transpose, two weight transposes, output rows (kernels %v)", n["mapK"], n)
	}
	outs, err := p.NewState().Forward(g.Theta(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := outs[0].Shape; len(got) != 3 || got[0] != 7 || got[1] != 10 || got[2] != 1 {
		t.Errorf("output shape %v, want [7 10 1]", got)
	}
}
