package audit

import (
	"math/rand/v2"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

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
		if a.Shape != datacheck.ShapeMany || a.Scheme != "sequence" || a.Sequences != 30 || a.MedianLength != 6 || a.Pairs != 30*5 || a.Correlated || a.Fits != tc.fits {
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
	if a.Shape != datacheck.ShapeOne || a.Scheme != "interval" || !a.Correlated || a.Lag1 < 0.65 || a.Lag1 > 0.9 || a.SuggestedLength < 10 || a.SuggestedLength > 30 || a.Fits || a.UsedLength != 3 {
		t.Errorf("one sequence with AR(1) errors: %+v", a)
	}
}
