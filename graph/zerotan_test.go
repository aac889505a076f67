package graph_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// TestHessianColumnsOneState forms every column of the Hessian of
// sum(y * w) for the paper's RNN on one State, unit direction after unit
// direction, as a dense Hessian does, and checks each against central
// differences of the gradient (Backward at theta ± h e_j on a fresh
// State). Along most unit directions whole parts of the program have zero
// tangents and are skipped (zerotan.go); a skipped result left over from
// an earlier direction, or a container read with a stale part, shows
// here as a wrong column.
func TestHessianColumnsOneState(t *testing.T) {
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	const n, T = 3, 10
	r := rand.New(rand.NewPCG(7, 8))
	x := graph.NewFloat([]int{n, T, 1}, nil)
	for i := range x.F {
		x.F[i] = 1 + 2*r.NormFloat64()
	}
	p, err := g.Compile([]*graph.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	P := len(theta)
	st := p.NewState()
	outs, err := st.Forward(theta, []*graph.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	w := graph.NewFloat(outs[0].Shape, nil)
	for i := range w.F {
		w.F[i] = r.NormFloat64()
	}
	seeds := []*graph.Tensor{w}
	zero := []*graph.Tensor{graph.NewFloat(outs[0].Shape, nil)}
	if err := st.Backward(seeds, make([]float64, P)); err != nil {
		t.Fatal(err)
	}
	grad := func(th []float64) []float64 {
		s := p.NewState()
		if _, err := s.Forward(th, []*graph.Tensor{x}); err != nil {
			t.Fatal(err)
		}
		gr := make([]float64, P)
		if err := s.Backward(seeds, gr); err != nil {
			t.Fatal(err)
		}
		return gr
	}
	e := make([]float64, P)
	// Every direction once, then the first ones again after the last (a
	// direction whose zero parts another one computed).
	order := make([]int, 0, P+25)
	for j := 0; j < P; j++ {
		order = append(order, j)
	}
	for j := 0; j < 25; j++ {
		order = append(order, j)
	}
	const h = 1e-5
	for _, j := range order {
		e[j] = 1
		if _, err := st.Tangent(e); err != nil {
			t.Fatal(err)
		}
		col := make([]float64, P)
		if err := st.SecondOrder(zero, col); err != nil {
			t.Fatal(err)
		}
		e[j] = 0
		th := append([]float64(nil), theta...)
		th[j] = theta[j] + h
		gp := grad(th)
		th[j] = theta[j] - h
		gm := grad(th)
		for i := range col {
			fd := (gp[i] - gm[i]) / (2 * h)
			if math.Abs(col[i]-fd) > 1e-5*(1+math.Abs(fd)) {
				t.Fatalf("column %d, row %d: %v, central differences %v", j, i, col[i], fd)
			}
		}
	}
}
