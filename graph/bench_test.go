package graph_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// paperBatch returns the paper-size model (vanilla RNN, 20 hidden units,
// one input, linear head) and a batch of n sequences of T steps.
func paperBatch(tb testing.TB, n, T int) (*graph.Graph, []*graph.Tensor) {
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	x := graph.NewFloat([]int{n, T, 1}, nil)
	for i := range x.F {
		x.F[i] = 1 + 2*r.NormFloat64()
	}
	return g, []*graph.Tensor{x}
}

// BenchmarkForwardPaper times one forward pass of the paper-size model on
// 1000 sequences of 10 steps (compare with benchmarks/torch_forward.py).
func BenchmarkForwardPaper(b *testing.B) {
	g, in := paperBatch(b, 1000, 10)
	p, err := g.Compile(in)
	if err != nil {
		b.Fatal(err)
	}
	s := p.NewState()
	theta := g.Theta()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Forward(theta, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExamplesPaper times the example analysis of the paper-size
// model's program for 250 sequences of 10 steps (made once per program).
func BenchmarkExamplesPaper(b *testing.B) {
	g, in := paperBatch(b, 250, 10)
	p, err := g.Compile(in)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.PerExample([]int{0}); err != nil {
			b.Fatal(err)
		}
	}
}
