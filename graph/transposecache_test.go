package graph_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/graph/graphtest"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestTransposeCacheForward runs the paper's RNN forward and backward on
// one State at one parameter vector changed in place between passes, and
// checks each gradient is bit for bit that of a fresh State: the
// transposes of the recurrent weight that the backward pass keeps
// (transposecache.go) must not outlive the Forward that they came from.
func TestTransposeCacheForward(t *testing.T) {
	g, err := onnx.Load(filepath.Join(graphtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	const n, T = 4, 10
	r := rand.New(rand.NewPCG(11, 12))
	x := graph.NewFloat([]int{n, T, 1}, nil)
	for i := range x.F {
		x.F[i] = 1 + 2*r.NormFloat64()
	}
	p, err := g.Compile([]*graph.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	seed := graph.NewFloat([]int{n, T, 1}, nil)
	for i := range seed.F {
		seed.F[i] = r.NormFloat64()
	}
	gradient := func(st *graph.State, theta []float64) []float64 {
		if _, err := st.Forward(theta, []*graph.Tensor{x}); err != nil {
			t.Fatal(err)
		}
		grad := make([]float64, len(theta))
		if err := st.Backward([]*graph.Tensor{seed}, grad); err != nil {
			t.Fatal(err)
		}
		return grad
	}
	theta := g.Theta()
	st := p.NewState()
	for pass := 0; pass < 3; pass++ {
		got := gradient(st, theta)
		want := gradient(p.NewState(), slices.Clone(theta))
		if !slices.Equal(got, want) {
			t.Fatalf("pass %d: the reused State's gradient differs from a fresh State's", pass)
		}
		for i := range theta {
			theta[i] *= 1 + 0.1*r.NormFloat64()
		}
	}
}
