package audit_test

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestAdaptiveRun audits the small synthetic example with the adaptive
// intervals and checks them against independent paths:
//   - per sequence on the calibration set's scores: the first forecast of
//     every sequence is made at alpha_1 = alpha, so its ACI interval is the
//     split-conformal interval (computed by the calibration code), and
//     the working level then follows the recursion from the covered flags;
//   - pooled in step order with --calibration-from last:N: every rolling
//     interval is prediction ± the conformal quantile of the last N
//     |residuals| of the forecasts at earlier steps, recomputed here from
//     the result's steps;
//   - the comparison of kinds repeats the summary's jackknife+ coverage;
//   - Fit then Predict gives Run's adaptive limits.
func TestAdaptiveRun(t *testing.T) {
	g, train, test, cal := smallSynthetic(t)
	const alpha, gamma = 0.1, 0.05
	opt := audit.Options{Layout: graph.BatchFirst, Ridge: 10, Calibration: cal, Adaptive: &adaptive.Options{Gamma: gamma}}
	res, err := audit.Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Adaptive
	if a == nil || a.Source != "calibration" || a.Chains != test.Len() || len(a.Kinds) != 11 {
		t.Fatalf("adaptive result %+v", a)
	}
	for _, s := range res.Sequences {
		at := alpha
		for k, st := range s.Steps {
			ad := st.Adaptive
			if math.Abs(ad.Alpha-at) > 1e-12 {
				t.Fatalf("sequence %s step %d: alpha_t %g, want %g from the recursion", s.ID, k, ad.Alpha, at)
			}
			if k == 0 && (math.Abs(ad.ACILower-st.Conformal.SplitLower) > 1e-12 || math.Abs(ad.ACIUpper-st.Conformal.SplitUpper) > 1e-12) {
				t.Fatalf("sequence %s: first ACI interval [%g, %g], split conformal [%g, %g]", s.ID, ad.ACILower, ad.ACIUpper, st.Conformal.SplitLower, st.Conformal.SplitUpper)
			}
			y := *st.Target
			miss := ad.Empty || y < ad.ACILower || y > ad.ACIUpper
			at += gamma * alpha
			if miss {
				at -= gamma
			}
		}
	}
	for _, k := range a.Kinds {
		finite := k.Kind == adaptive.KindACIClipped || k.Kind == adaptive.KindQuantileTracking || k.Kind == adaptive.KindPID
		if finite && (k.Infinite != 0 || math.IsInf(k.MedianWidth, 0) || math.IsInf(k.P90Width, 0)) {
			t.Errorf("%s: %d unbounded intervals, median width %g, 90th percentile %g", k.Kind, k.Infinite, k.MedianWidth, k.P90Width)
		}
		if k.Kind == a.Recommended && k.Infinite != 0 {
			t.Errorf("the recommended kind %s has %d unbounded intervals", k.Kind, k.Infinite)
		}
		if k.Kind == interval.KindJackknife && math.Abs(k.Coverage-res.Summary.Coverage) > 1e-12 {
			t.Errorf("jackknife+ coverage %g in the comparison, %g in the summary", k.Coverage, res.Summary.Coverage)
		}
	}

	// Fit then Predict gives the same adaptive intervals.
	samePredicted(t, g, train, test, &opt, res)

	const window = 40
	opt = audit.Options{Layout: graph.BatchFirst, Ridge: 10, Adaptive: &adaptive.Options{Window: window, Pooled: true}}
	res, err = audit.Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Adaptive.Source != "window" || res.Adaptive.Chains != 1 {
		t.Fatalf("pooled adaptive result %+v", res.Adaptive)
	}
	type fc struct {
		step     float64
		seq      int
		pred, y  float64
		rlo, rup float64
	}
	var all []fc
	for i, s := range res.Sequences {
		for _, st := range s.Steps {
			all = append(all, fc{st.Step, i, st.Prediction, *st.Target, st.Adaptive.RollingLower, st.Adaptive.RollingUpper})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].step != all[j].step {
			return all[i].step < all[j].step
		}
		return all[i].seq < all[j].seq
	})
	checked := 0
	for i, f := range all {
		var past []float64
		for _, e := range all[:i] {
			if e.step < f.step {
				past = append(past, math.Abs(e.y-e.pred))
			}
		}
		if len(past) > window {
			past = past[len(past)-window:]
		}
		slices.Sort(past)
		q := math.Inf(1)
		if k := int(math.Ceil((1 - alpha) * float64(len(past)+1))); k <= len(past) {
			q = past[k-1]
		}
		if !(f.rup == f.pred+q || math.Abs(f.rup-(f.pred+q)) < 1e-12) || !(f.rlo == f.pred-q || math.Abs(f.rlo-(f.pred-q)) < 1e-12) {
			t.Fatalf("forecast %d (step %g, sequence %d): rolling [%g, %g], want %g ± %g", i, f.step, f.seq, f.rlo, f.rup, f.pred, q)
		}
		if !math.IsInf(q, 1) {
			checked++
		}
	}
	if checked < len(all)/2 {
		t.Errorf("only %d of %d rolling intervals bounded", checked, len(all))
	}
}

// TestAdaptiveRunJackknifeBase audits the small synthetic example with
// ACI and AgACI on the jackknife base, one state per sequence: the first
// forecast of every sequence is made at alpha_1 = alpha, where the
// recomputed jackknife+ interval is the audit's own jackknife+ interval
// (computed by the limits phase, an independent path); the working level
// then follows the recursion from the covered flags; every ACI interval
// lies inside or outside the one at alpha as alpha_t is above or below
// alpha (the family is nested); and Fit then Predict gives Run's limits.
// With the low-rank solver, which keeps no sets, a note says the
// interval is scaled instead.
func TestAdaptiveRunJackknifeBase(t *testing.T) {
	g, train, test, _ := smallSynthetic(t)
	const alpha, gamma = 0.1, 0.05
	opt := audit.Options{Layout: graph.BatchFirst, Ridge: 10, Adaptive: &adaptive.Options{Gamma: gamma, Base: adaptive.BaseJackknife}}
	res, err := audit.Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Adaptive.Notes) > 0 && strings.Contains(strings.Join(res.Adaptive.Notes, " "), "scale") {
		t.Errorf("notes %q on the dense solver", res.Adaptive.Notes)
	}
	nested := 0
	for _, s := range res.Sequences {
		at := alpha
		for k, st := range s.Steps {
			ad := st.Adaptive
			if math.Abs(ad.Alpha-at) > 1e-12 {
				t.Fatalf("sequence %s step %d: alpha_t %g, want %g from the recursion", s.ID, k, ad.Alpha, at)
			}
			if k == 0 && (ad.ACILower != st.Lower || ad.ACIUpper != st.Upper) {
				t.Fatalf("sequence %s: first ACI interval [%g, %g], jackknife+ [%g, %g]", s.ID, ad.ACILower, ad.ACIUpper, st.Lower, st.Upper)
			}
			switch {
			case ad.Empty:
			case ad.Alpha > alpha && (ad.ACILower < st.Lower || ad.ACIUpper > st.Upper):
				t.Fatalf("sequence %s step %d: alpha_t %g > alpha but ACI [%g, %g] not inside [%g, %g]", s.ID, k, ad.Alpha, ad.ACILower, ad.ACIUpper, st.Lower, st.Upper)
			case ad.Alpha < alpha && (ad.ACILower > st.Lower || ad.ACIUpper < st.Upper):
				t.Fatalf("sequence %s step %d: alpha_t %g < alpha but ACI [%g, %g] not around [%g, %g]", s.ID, k, ad.Alpha, ad.ACILower, ad.ACIUpper, st.Lower, st.Upper)
			case ad.ACILower != st.Lower || ad.ACIUpper != st.Upper:
				nested++
			}
			y := *st.Target
			at += gamma * alpha
			if ad.Empty || y < ad.ACILower || y > ad.ACIUpper {
				at -= gamma
			}
		}
	}
	if nested == 0 {
		t.Error("ACI never left the jackknife+ interval at alpha")
	}
	samePredicted(t, g, train, test, &opt, res)

	opt.Solver = audit.LowRank
	res, err = audit.Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Adaptive.Notes, " "), "low-rank") {
		t.Errorf("low-rank notes %q, want one on the scaled interval", res.Adaptive.Notes)
	}
}

// samePredicted fits with opt on train, predicts test and checks that
// every step's adaptive limits equal those of res, Run's result.
func samePredicted(t *testing.T, g *graph.Graph, train, test *blocks.Dataset, opt *audit.Options, res *audit.Result) {
	t.Helper()
	fit, err := audit.Fit(context.Background(), g, train, opt)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := fit.Predict(context.Background(), test)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range res.Sequences {
		for k, st := range s.Steps {
			if got := pred.Sequences[i].Steps[k].Adaptive; got == nil || *got != *st.Adaptive {
				t.Fatalf("sequence %s step %d: Predict's adaptive limits %+v, Run's %+v", s.ID, k, got, st.Adaptive)
			}
		}
	}
}
