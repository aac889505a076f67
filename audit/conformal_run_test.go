package audit_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestCalibrationRun audits the small synthetic example with the
// calibration split examples/synthetic/cal_small.csv (200 held-out
// sequences, made by examples/make_calibration.py) and checks:
//   - the jackknife+ and in-sample results do not change with a
//     calibration set;
//   - the split-conformal and Bonferroni half-widths and the
//     conformalized jackknife+ scales equal their definitions computed
//     from a second audit that evaluates the calibration sequences as its
//     test data (an independent path through the code: no calibration
//     plumbing), and every step's calibrated limits follow from them;
//   - split-conformal coverage on the 2,000 test values is near 90%;
//   - the comparison of kinds agrees with the summary where they overlap.
func TestCalibrationRun(t *testing.T) {
	g, train, test, cal := smallSynthetic(t)
	low, high := 0.0, 10.0
	opt := audit.Options{Layout: graph.BatchFirst, Ridge: 10, Low: &low, High: &high}
	plain, err := audit.Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Conformal != nil || plain.Sequences[0].Steps[0].Conformal != nil {
		t.Fatal("calibrated results without a calibration set")
	}
	ref, err := audit.Run(context.Background(), g, train, cal, &opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Calibration = cal
	res, err := audit.Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	const alpha = 0.1
	c := res.Conformal
	if c == nil || c.Sequences != 200 || c.Values != 2000 || len(c.Forecasts) != 10 {
		t.Fatalf("conformal result %+v", c)
	}

	// Nothing else changes.
	for i, s := range res.Sequences {
		for k, st := range s.Steps {
			p := plain.Sequences[i].Steps[k]
			if st.Lower != p.Lower || st.Upper != p.Upper || st.NaiveLower != p.NaiveLower || st.Prediction != p.Prediction {
				t.Fatalf("sequence %s step %d changed with a calibration set", s.ID, k)
			}
		}
	}
	if res.Summary.Coverage != plain.Summary.Coverage || res.Summary.MeanLength != plain.Summary.MeanLength {
		t.Error("the summary changed with a calibration set")
	}

	// The definitions, from the calibration sequences audited as test
	// data: per row, the |residuals| and the scores of the scaled
	// jackknife+ family.
	res0 := make([][]float64, 10)
	scores := make([][]float64, 10)
	for _, s := range ref.Sequences {
		for _, st := range s.Steps {
			y, f := *st.Target, st.Prediction
			res0[st.Row] = append(res0[st.Row], math.Abs(y-f))
			var sc float64
			switch {
			case y > f:
				sc = (y - f) / (st.Upper - f)
			case y < f:
				sc = (f - y) / (f - st.Lower)
			}
			scores[st.Row] = append(scores[st.Row], sc)
		}
	}
	kth := func(v []float64, a float64) float64 {
		k := int(math.Ceil((1-a)*float64(len(v)+1) - 1e-9))
		return slices.Sorted(slices.Values(v))[k-1]
	}
	for _, f := range c.Forecasts {
		if f.M != 200 || f.HalfWidth != kth(res0[f.Row], alpha) || f.Scale != kth(scores[f.Row], alpha) {
			t.Errorf("row %d: m %d, half-width %g, scale %g; want 200, %g, %g", f.Row, f.M, f.HalfWidth, f.Scale, kth(res0[f.Row], alpha), kth(scores[f.Row], alpha))
		}
	}
	covered, n := 0, 0
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			cf := st.Conformal
			f := c.Forecasts[st.Row]
			h, b := f.HalfWidth, kth(res0[st.Row], alpha/10) // Bonferroni: 10 forecasts per sequence
			p := st.Prediction
			lo, up := p-f.Scale*(p-st.Lower), p+f.Scale*(st.Upper-p)
			if cf == nil || cf.SplitLower != p-h || cf.SplitUpper != p+h || cf.BonferroniLower != p-b || cf.BonferroniUpper != p+b ||
				math.Abs(cf.JackknifeLower-lo) > 1e-12*math.Abs(lo) || math.Abs(cf.JackknifeUpper-up) > 1e-12*math.Abs(up) || cf.M != 200 {
				t.Fatalf("sequence %s row %d: calibrated limits %+v; want split ±%g, Bonferroni ±%g, jackknife [%g, %g]", s.ID, st.Row, cf, h, b, lo, up)
			}
			if st.Target != nil {
				n++
				if math.Abs(*st.Target-p) <= h {
					covered++
				}
			}
		}
	}
	// Split conformal covers each value with probability in [0.9, 0.905]
	// over calibration and test draws. Given this calibration set the
	// coverage still varies (by about sqrt(0.09/201) = 0.021 at one step;
	// at most that pooled), and the 2,000 test values add sqrt(0.09/2000)
	// = 0.0067: 3.5 combined standard errors allow 0.078.
	cov := float64(covered) / float64(n)
	t.Logf("split conformal: coverage %.4f of %d test values", cov, n)
	if math.Abs(cov-0.9) > 0.078 {
		t.Errorf("split-conformal coverage %.4f, want near 0.9", cov)
	}

	// Normalised split conformal: symmetric about the prediction at every
	// step, and on the calibration values, from which its per-step
	// quantiles come (200 a step, one group each), covering at least
	// ceil(0.9 x 201) / 200 = 90.5% at every step by construction (a
	// scale paired with the wrong value would not).
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			cf := st.Conformal
			if d := (cf.NormalisedUpper - st.Prediction) - (st.Prediction - cf.NormalisedLower); !(math.Abs(d) <= 1e-9*math.Abs(cf.NormalisedUpper-cf.NormalisedLower)) {
				t.Fatalf("sequence %s row %d: normalised [%g, %g] not about %g", s.ID, st.Row, cf.NormalisedLower, cf.NormalisedUpper, st.Prediction)
			}
		}
	}
	if nc := c.Calibrated[3]; nc.Kind != interval.KindNormalised || slices.Min(nc.CoveragePerStep) < 0.905 || nc.Unbounded != 0 {
		t.Errorf("normalised at the calibration values: %+v", nc)
	}
	kinds := []string{interval.KindJackknife, interval.KindConformalJackknife, interval.KindSplit, interval.KindBonferroni, interval.KindInSample, interval.KindNormalised}
	if len(c.Kinds) != len(kinds) {
		t.Fatalf("%d kinds", len(c.Kinds))
	}
	for i, k := range c.Kinds {
		if k.Kind != kinds[i] || len(k.CoveragePerStep) != 10 || k.Audit.Low == nil || k.Audit.High == nil || k.Sequences != 200 {
			t.Errorf("kind %d: %+v", i, k)
		}
		t.Logf("%-28s coverage %.4f joint %.3f width %.4f score %.4f", k.Kind, k.Coverage, k.JointCoverage, k.MeanLength, k.IntervalScore)
	}
	s := res.Summary
	if jk := c.Kinds[0]; jk.Coverage != s.Coverage || math.Abs(jk.MeanLength-s.MeanLength) > 1e-12 || jk.JointCoverage != s.JointCoverage ||
		math.Abs(jk.IntervalScore-s.IntervalScore) > 1e-12 || *jk.Audit.Low != *s.Audit.Low || *jk.Audit.High != *s.Audit.High {
		t.Errorf("jackknife+ kind %+v disagrees with the summary", jk)
	}
	if ns := c.Kinds[4]; ns.Coverage != s.Naive.Coverage || math.Abs(ns.MeanLength-s.Naive.MeanLength) > 1e-12 {
		t.Errorf("in-sample kind %+v disagrees with the summary's naive intervals", ns)
	}
	if sp := c.Kinds[2]; sp.Coverage != cov {
		t.Errorf("split kind coverage %g, counted %g", sp.Coverage, cov)
	}
}
