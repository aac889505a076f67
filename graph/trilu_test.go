package graph_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// TestTriluConformance runs the ONNX backend node tests of Trilu in
// testdata/onnx-trilu (18 cases: upper and lower, k positive, negative,
// beyond the matrix, one row, square, batched, empty; see its README) like
// TestConformance.
func TestTriluConformance(t *testing.T) {
	runSuite(t, filepath.Join("testdata", "onnx-trilu"), 18)
}

// TestTriluOfInfinities checks torch's causal mask: the upper triangle
// (k = 1) of a constant tensor of -inf, added to run-time scores, has 0
// where Trilu drops an entry (not -inf * 0 = NaN) and -inf above the
// diagonal, so that Softmax gives the hand-worked causal weights.
func TestTriluOfInfinities(t *testing.T) {
	inf := math.Inf(-1)
	init := map[string]*graph.Tensor{
		"shape": graph.NewInt([]int{2}, []int64{3, 3}),
		"k":     graph.NewInt(nil, []int64{1}),
	}
	nodes := []*graph.Node{
		op("ConstantOfShape", []string{"full"}, []string{"shape"}, map[string]graph.Attr{"value": {Kind: graph.AttrTensor, T: graph.NewFloat([]int{1}, []float64{inf})}}),
		op("Trilu", []string{"mask"}, []string{"full", "k"}, nil),
		op("Add", []string{"s"}, []string{"x", "mask"}, nil),
		op("Softmax", []string{"y"}, []string{"s"}, nil),
	}
	g, err := graph.New(14, []graph.ValueInfo{{Name: "x", Elem: graph.ElemDouble}}, []graph.ValueInfo{{Name: "y", Elem: graph.ElemDouble}}, nodes, init, []string{"shape", "k"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Run(nil, []*graph.Tensor{graph.NewFloat([]int{3, 3}, []float64{0, 5, 5, 0, 0, 5, 0, 0, 0})})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 0, 0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}
	for i, w := range want {
		if got := out[0].F[i]; math.Abs(got-w) > 1e-15 {
			t.Errorf("y[%d] = %v, want %v", i, got, w)
		}
	}
}
