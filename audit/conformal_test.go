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
				// A forecast with fewer than 9 values (a finite quantile at
				// alpha 0.1 needs 9) pools the nearest rows', the earlier
				// first; Bonferroni does not pool.
				pooled := slices.Clone(resid[f])
				for d := 1; len(pooled) < 9 && d < 10; d++ {
					for _, r := range []int{f.T - d, f.T + d} {
						if r >= 0 && len(pooled) < 9 {
							pooled = append(pooled, resid[forecast{T: r, H: f.H}]...)
						}
					}
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
