package audit

import (
	"math/rand/v2"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestDependenceLength: the block length with |rho|^K <= 0.05, at most
// half the longest sequence; 1 without correlation.
func TestDependenceLength(t *testing.T) {
	for _, tc := range []struct {
		rho        float64
		correlated bool
		maxLen     int
		want       int
	}{
		{0.5, true, 100, 5},   // 0.5^4 = 0.0625, 0.5^5 = 0.031
		{-0.5, true, 100, 5},  // the sign does not matter
		{0.9, true, 100, 29},  // 0.9^28 = 0.052, 0.9^29 = 0.047
		{0.9, true, 20, 10},   // two intervals of 10
		{0.05, false, 100, 1}, // no correlation
		{1, true, 30, 15},
	} {
		if got := dependenceLength(tc.rho, tc.correlated, tc.maxLen); got != tc.want {
			t.Errorf("dependenceLength(%v, %v, %d) = %d, want %d", tc.rho, tc.correlated, tc.maxLen, got, tc.want)
		}
	}
	if ManySequences(0.1) != 20 || ManySequences(0.05) != 38 || ManySequences(0.5) != 20 {
		t.Errorf("ManySequences: %d, %d, %d; want 20, 38, 20", ManySequences(0.1), ManySequences(0.05), ManySequences(0.5))
	}
}

// TestAdviseScheme: from the training data of a real model, many
// sequences with independent noise get sequence blocks (interval blocks
// do not fit), and one long sequence whose errors follow an AR(1) with
// coefficient 0.8 gets interval blocks at least as long as that
// dependence needs (0.8^14 = 0.044), so that interval blocks of 3 steps do
// not fit. (Independent noise: over the data seeds 51 to 56 the lag-1
// autocorrelation ranged from -0.18 to 0.10 over 150 pairs; the 2-SE rule
// flags about one seed in twenty, 51 among them.)
func TestAdviseScheme(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	many := randomData(t, "many", g, graph.BatchFirst, 30, 0, 6, 6, 52)
	for _, tc := range []struct {
		kind blocks.Kind
		fits bool
	}{{blocks.Sequences, true}, {blocks.Intervals, false}} {
		p := newProblem(t, g, many, Options{Layout: graph.BatchFirst, Blocks: tc.kind, BlockLength: 2})
		a, err := adviseScheme(t.Context(), p, mustTrainOutputs(t, p))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("30 sequences, %s blocks: lag-1 autocorrelation %.3f over %d pairs", tc.kind, a.Lag1, a.Pairs)
		if a.Shape != ShapeMany || a.Scheme != "sequence" || a.Sequences != 30 || a.MedianLength != 6 || a.Pairs != 30*5 || a.Correlated || a.Fits != tc.fits {
			t.Errorf("30 sequences, %s blocks: %+v", tc.kind, a)
		}
	}

	one := randomData(t, "one", g, graph.BatchFirst, 1, 0, 400, 400, 52)
	r := rand.New(rand.NewPCG(53, 0))
	e := 0.0
	for _, y := range one.Seqs[0].Y {
		e = 0.8*e + r.NormFloat64()
		y[0] += e
	}
	p := newProblem(t, g, one, Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 3})
	a, err := adviseScheme(t.Context(), p, mustTrainOutputs(t, p))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one sequence, AR(1) 0.8 errors: lag-1 autocorrelation %.3f, suggested block length %d", a.Lag1, a.SuggestedLength)
	if a.Shape != ShapeOne || a.Scheme != "interval" || !a.Correlated || a.Lag1 < 0.65 || a.Lag1 > 0.9 || a.SuggestedLength < 10 || a.SuggestedLength > 30 || a.Fits || a.UsedLength != 3 {
		t.Errorf("one sequence with AR(1) errors: %+v", a)
	}
}
