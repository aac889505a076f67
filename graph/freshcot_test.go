package graph_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// TestSecondOrderFreshCotangents checks that SecondOrder, which sets
// rather than adds the first contribution to a cotangent tangent and
// zeroes only the rest (freshcot.go), gives bit for bit the Hessian-vector
// products of zeroing them all and adding, on the paper's RNN along
// several directions in a row (so that stale buffers from the previous
// direction would show), unit ones included.
func TestSecondOrderFreshCotangents(t *testing.T) {
	g, in := paperBatch(t, 12, 5)
	p, err := g.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	P := len(theta)
	r := rand.New(rand.NewPCG(5, 6))
	run := func(s *graph.State, dirs [][]float64) [][]float64 {
		outs, err := s.Forward(theta, in)
		if err != nil {
			t.Fatal(err)
		}
		gt := graph.NewFloat(outs[0].Shape, nil)
		for i := range gt.F {
			gt.F[i] = r.NormFloat64()
		}
		if err := s.Backward([]*graph.Tensor{gt}, make([]float64, P)); err != nil {
			t.Fatal(err)
		}
		var hvs [][]float64
		for _, v := range dirs {
			douts, err := s.Tangent(v)
			if err != nil {
				t.Fatal(err)
			}
			dg := graph.NewFloat(outs[0].Shape, nil)
			for i := range dg.F {
				dg.F[i] = 0.5 * douts[0].F[i]
			}
			hv := make([]float64, P)
			if err := s.SecondOrder([]*graph.Tensor{dg}, hv); err != nil {
				t.Fatal(err)
			}
			hvs = append(hvs, hv)
		}
		return hvs
	}
	var dirs [][]float64
	for _, j := range []int{0, P / 2, P - 1} {
		e := make([]float64, P)
		e[j] = 1
		dirs = append(dirs, e)
	}
	for range 2 {
		v := make([]float64, P)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		dirs = append(dirs, v)
	}
	r = rand.New(rand.NewPCG(7, 8))
	got := run(p.NewState(), dirs)
	r = rand.New(rand.NewPCG(7, 8))
	ref := p.NewState()
	graph.ZeroAllCotangents(ref)
	want := run(ref, dirs)
	for d := range want {
		nonzero := 0
		for i := range want[d] {
			if math.Float64bits(got[d][i]) != math.Float64bits(want[d][i]) {
				t.Fatalf("direction %d: entry %d is %v, want %v", d, i, got[d][i], want[d][i])
			}
			if want[d][i] != 0 {
				nonzero++
			}
		}
		if nonzero == 0 {
			t.Fatalf("direction %d: an all-zero product tests nothing", d)
		}
	}
}

// TestTangentSetsFirstProduct checks that Tangent, whose dense products
// set a tangent with no addend tangent instead of zeroing it first
// (jvpSetsFirst), gives bit for bit the tangents of a new State along a
// direction after others (stale buffers would show), on the paper's RNN.
func TestTangentSetsFirstProduct(t *testing.T) {
	g, in := paperBatch(t, 12, 5)
	p, err := g.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	P := len(theta)
	r := rand.New(rand.NewPCG(9, 10))
	dirs := make([][]float64, 5)
	for d := range dirs {
		dirs[d] = make([]float64, P)
		for i := range dirs[d] {
			dirs[d][i] = r.NormFloat64()
		}
	}
	// Unit directions along the recurrent weights: the input projection's
	// tangent is zero, so the recurrent products have no addend tangent.
	for _, pr := range g.Params() {
		if pr.Size == 400 {
			for d, j := range []int{2, 3} {
				dirs[j] = make([]float64, P)
				dirs[j][pr.Offset+7*d+3] = 1
			}
		}
	}
	tangent := func(s *graph.State, v []float64) []float64 {
		if _, err := s.Forward(theta, in); err != nil {
			t.Fatal(err)
		}
		douts, err := s.Tangent(v)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), douts[0].F...)
	}
	reused := p.NewState()
	for d, v := range dirs {
		got, want := tangent(reused, v), tangent(p.NewState(), v)
		nonzero := 0
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("direction %d: tangent %d is %v, want %v", d, i, got[i], want[i])
			}
			if want[i] != 0 {
				nonzero++
			}
		}
		if nonzero == 0 {
			t.Fatalf("direction %d: an all-zero tangent tests nothing", d)
		}
	}
}
