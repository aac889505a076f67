package audit

import (
	"context"
	"errors"
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

// TestCalibrationOverlap: a calibration set that shares an id or a
// sequence with the training data, or a sequence with the test data, is
// an error that names the calibration file, the line and the other file;
// an unlabelled calibration set, a missing test set and other columns
// are errors too; disjoint files pass.
func TestCalibrationOverlap(t *testing.T) {
	train := readCSV(t, "train.csv", "id,t,x,y\na,1,1,2\na,2,2,3\nb,1,5,1\nb,2,6,2\n")
	test := readCSV(t, "test.csv", "id,t,x,y\nk,1,9,2\nk,2,9,3\n")
	for _, tc := range []struct {
		name, cal string
		test      *blocks.Dataset
		want      []string // in the message
		overlap   bool
	}{
		{"same id", "id,t,x,y\nc,1,0,0\nb,1,7,1\nb,2,8,2\n", test,
			[]string{`cal.csv:3: calibration sequence "b" has the id of a training sequence (train.csv line 4)`, "held out from training"}, true},
		{"same rows", "id,t,x,y\nz,1,5,0\nz,2,6,0\n", test,
			[]string{`cal.csv:2: calibration sequence "z" has the same steps and features as training sequence "b" (train.csv line 4)`}, true},
		{"two overlaps", "id,t,x,y\na,1,0,0\nb,1,0,0\n", test,
			[]string{`calibration sequence "a"`, "and 1 more calibration sequences overlap"}, true},
		{"test rows", "id,t,x,y\nq,2,9,0\nq,1,9,5\n", test,
			[]string{`calibration sequence "q" has the same steps and features as test sequence "k" (test.csv line 2)`, "must be different sequences"}, true},
		{"unlabelled", "id,t,x\nc,1,0\n", test, []string{"cal.csv:1:", "no target column"}, false},
		{"no test", "id,t,x,y\nc,1,0,0\n", nil, []string{"needs test data"}, false},
		{"other features", "id,t,w,y\nc,1,0,0\n", test, []string{"cal.csv:1:", "feature"}, false},
	} {
		cal := readCSV(t, "cal.csv", tc.cal)
		err := checkCalibration(train, tc.test, cal)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		if got := errors.Is(err, errCalibrationOverlap); got != tc.overlap {
			t.Errorf("%s: errors.Is(err, errCalibrationOverlap) = %v", tc.name, got)
		}
	}
	// Same id as a test sequence with other rows is allowed (files often
	// number their sequences from 1), and so are disjoint files.
	if err := checkCalibration(train, test, readCSV(t, "cal.csv", "id,t,x,y\nk,1,0,0\nc,2,1,1\n")); err != nil {
		t.Errorf("disjoint: %v", err)
	}
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
