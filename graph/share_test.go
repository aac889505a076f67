package graph_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/graph/graphtest"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestShareBuffers forms Hessian and Gauss-Newton columns of two batches
// of the paper's RNN on States that share their derivative buffers
// (ShareBuffers), the batches interleaved direction by direction as a
// dense curvature does, and checks every column is bit for bit what
// States with buffers of their own give (TestHessianColumnsOneState
// checks those against central differences), and that a State whose
// tangents another State overwrote refuses SecondOrder.
func TestShareBuffers(t *testing.T) {
	g, err := onnx.Load(filepath.Join(graphtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	const n, T = 3, 10
	r := rand.New(rand.NewPCG(9, 10))
	var xs [2]*graph.Tensor
	for b := range xs {
		xs[b] = graph.NewFloat([]int{n, T, 1}, nil)
		for i := range xs[b].F {
			xs[b].F[i] = 1 + 2*r.NormFloat64()
		}
	}
	p, err := g.Compile([]*graph.Tensor{xs[0]})
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	P := len(theta)
	w := graph.NewFloat([]int{n, T, 1}, nil)
	for i := range w.F {
		w.F[i] = r.NormFloat64()
	}
	seeds := []*graph.Tensor{w}
	prepare := func(backward bool) (own, shared [2]*graph.State) {
		for b := range xs {
			for _, st := range []**graph.State{&own[b], &shared[b]} {
				*st = p.NewState()
				if _, err := (*st).Forward(theta, []*graph.Tensor{xs[b]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := shared[1].ShareBuffers(shared[0], !backward); err != nil {
			t.Fatal(err)
		}
		if backward {
			for b := range xs {
				for _, st := range []*graph.State{own[b], shared[b]} {
					if err := st.Backward(seeds, make([]float64, P)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		return own, shared
	}
	e := make([]float64, P)
	// column runs one direction's passes on st: the Hessian's tangent and
	// second-order passes, or the Gauss-Newton's tangent and backward.
	column := func(st *graph.State, hessian bool, j int) []float64 {
		e[j] = 1
		defer func() { e[j] = 0 }()
		douts, err := st.Tangent(e)
		if err != nil {
			t.Fatal(err)
		}
		dg := graph.NewFloat(w.Shape, nil)
		if douts[0] != nil {
			for i, v := range douts[0].F {
				dg.F[i] = 0.5 * v
			}
		}
		col := make([]float64, P)
		if hessian {
			err = st.SecondOrder([]*graph.Tensor{dg}, col)
		} else {
			err = st.Backward([]*graph.Tensor{dg}, col)
		}
		if err != nil {
			t.Fatal(err)
		}
		return col
	}
	var order []int
	for j := 0; j < P; j += 7 {
		order = append(order, j)
	}
	order = append(order, 0, P-1, 3)
	for _, hessian := range []bool{true, false} {
		own, shared := prepare(hessian)
		for _, j := range order {
			for b := range xs {
				want, got := column(own[b], hessian, j), column(shared[b], hessian, j)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("hessian %v, batch %d, column %d, row %d: %v with shared buffers, %v without", hessian, b, j, i, got[i], want[i])
					}
				}
			}
		}
	}
	_, shared := prepare(true)
	e[5] = 1
	if _, err := shared[0].Tangent(e); err != nil {
		t.Fatal(err)
	}
	if _, err := shared[1].Tangent(e); err != nil {
		t.Fatal(err)
	}
	if err := shared[0].SecondOrder(seeds, make([]float64, P)); err == nil {
		t.Error("SecondOrder ran on tangents another State overwrote")
	}
	if err := shared[1].SecondOrder(seeds, make([]float64, P)); err != nil {
		t.Errorf("SecondOrder after the State's own Tangent: %v", err)
	}
	q, err := g.Compile([]*graph.Tensor{graph.NewFloat([]int{n + 1, T, 1}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.NewState().ShareBuffers(shared[0], false); err == nil {
		t.Error("States of two Programs shared their buffers")
	}
}
