package audit

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// conformalRef is the conformal quantile by its definition, in exact
// integer arithmetic: the smallest score q with #(scores <= q) >=
// (1 - alpha)(m + 1), alpha = num/den; +Inf when no score qualifies.
func conformalRef(num, den int, scores []float64) float64 {
	m := len(scores)
	best := math.Inf(1)
	for _, q := range scores {
		c := 0
		for _, v := range scores {
			if v <= q {
				c++
			}
		}
		if c*den >= (den-num)*(m+1) && q < best {
			best = q
		}
	}
	return best
}

// mondrianRef is the group of rows of forecast f (docs/design.md,
// section 6.5) written out from the rule's words: over the rows 0..T-1 of
// f's horizon (T past the last row with a calibration value or a test
// forecast), a row with need values or more stands alone; runs of other
// rows are cut into groups that close at need values; a run's short
// remainder joins the group before it, or without one the group after.
func mondrianRef(resid map[forecast][]float64, seqs []SequenceResult, f forecast, need int) []int {
	T := 0
	for g := range resid {
		if g.H == f.H {
			T = max(T, g.T+1)
		}
	}
	for _, s := range seqs {
		for _, st := range s.Steps {
			if st.Horizon == f.H {
				T = max(T, st.Row+1)
			}
		}
	}
	n := func(r int) int { return len(resid[forecast{T: r, H: f.H}]) }
	var groups [][]int
	lead := []int(nil) // a short run with no group before it
	for r := 0; r < T; {
		if n(r) >= need {
			groups = append(groups, append(lead, r))
			lead = nil
			r++
			continue
		}
		var run []int
		sum := 0
		for ; r < T && n(r) < need && sum < need; r++ {
			run, sum = append(run, r), sum+n(r)
		}
		switch {
		case sum >= need:
			groups = append(groups, append(lead, run...))
			lead = nil
		case len(groups) > 0:
			groups[len(groups)-1] = append(groups[len(groups)-1], run...)
		default:
			lead = append(lead, run...)
		}
	}
	if len(lead) > 0 {
		groups = append(groups, lead)
	}
	for _, g := range groups {
		if slices.Contains(g, f.T) {
			return g
		}
	}
	return nil
}

func readCSV(t *testing.T, name, text string) *blocks.Dataset {
	t.Helper()
	d, err := blocks.Read(strings.NewReader(text), name, &blocks.Options{OptionalTargets: true})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCalibrationShapes runs calibrated audits of a many-to-one model, a
// model with 3 horizons and variable-length sequences, and an unlabelled
// test set: every forecast gets calibrated limits whose half-widths follow
// from the calibration values of its (row, horizon), the Bonferroni level
// counts the forecasts whose target lies inside the sequence, and the
// comparison of kinds needs test targets.
func TestCalibrationShapes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		model      string
		unlabelled bool
	}{{"lstm_last_bf", false}, {"gru_horizon3_bf", false}, {"rnn_tanh_1l_bf", true}} {
		g := fixtureModel(t, tc.model)
		train := randomData(t, "train", g, graph.BatchFirst, 10, 0, 3, 6, 41)
		test := randomData(t, "test", g, graph.BatchFirst, 4, 0, 3, 6, 42)
		cal := randomData(t, "cal", g, graph.BatchFirst, 25, 0, 3, 6, 43)
		for _, s := range cal.Seqs {
			s.ID = "c" + s.ID
		}
		if tc.unlabelled {
			test.Targets = nil
			for _, s := range test.Seqs {
				s.Y = nil
			}
		}
		res, err := Run(ctx, g, train, test, &Options{Layout: graph.BatchFirst, Calibration: cal})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		c := res.Conformal
		if (c.Kinds == nil) != tc.unlabelled {
			t.Errorf("%s: %d kinds", tc.model, len(c.Kinds))
		}
		// The calibration |residuals| per forecast, from an audit of the
		// calibration set as test data.
		ref, err := Run(ctx, g, train, cal, &Options{Layout: graph.BatchFirst})
		if err != nil {
			t.Fatal(err)
		}
		resid := map[forecast][]float64{}
		for _, s := range ref.Sequences {
			for _, st := range s.Steps {
				if st.Target != nil {
					f := forecast{T: st.Row, H: st.Horizon}
					resid[f] = append(resid[f], math.Abs(*st.Target-st.Prediction))
				}
			}
		}
		for i, s := range res.Sequences {
			T := test.Seqs[i].Len()
			L := 0
			for _, st := range s.Steps {
				if st.Row+st.Horizon < T {
					L++
				}
			}
			for _, st := range s.Steps {
				f := forecast{T: st.Row, H: st.Horizon}
				cf := st.Conformal
				// The forecast's quantile is over its Mondrian group of rows
				// (at least 19 values at alpha 0.1); Bonferroni does not pool.
				var pooled []float64
				for _, r := range mondrianRef(resid, res.Sequences, f, 19) {
					pooled = append(pooled, resid[forecast{T: r, H: f.H}]...)
				}
				h, b := conformalRef(1, 10, pooled), conformalRef(1, 10*L, resid[f])
				if cf == nil || cf.M != len(resid[f]) || cf.SplitUpper != st.Prediction+h || cf.SplitLower != st.Prediction-h ||
					cf.BonferroniUpper != st.Prediction+b || cf.BonferroniLower != st.Prediction-b {
					t.Fatalf("%s: sequence %s forecast %v (prediction %g): %+v; want m %d, half-widths %g and %g (L %d)", tc.model, s.ID, f, st.Prediction, cf, len(resid[f]), h, b, L)
				}
			}
		}
	}
}
