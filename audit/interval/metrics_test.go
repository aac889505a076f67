package interval

import (
	"math"
	"slices"
	"testing"
)

// near compares within 1e-12 (equal infinities are close).
func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

// TestMetrics: coverage, joint coverage, widths, the Winkler score and
// the threshold flags of five labelled values, counted by hand.
func TestMetrics(t *testing.T) {
	inf := math.Inf(1)
	type value struct {
		seq, row int
		y        float64
	}
	vs := []value{{0, 0, 5}, {0, 1, 9.5}, {1, 0, 0.5}, {1, 1, 2}, {2, 1, 10}}
	lo := []float64{4, 7, 0, -inf, 8}
	up := []float64{6, 9, 3, 4, 12}
	low, high := 1.0, 9.0
	m := NewMetrics(0.2, &low, &high, 2)
	for i, v := range vs {
		m.Add(v.seq, v.row, v.y, lo[i], up[i], lo[i] <= v.y && v.y <= up[i])
	}
	k := m.Summary("jackknife_plus")
	// Value 1 misses by 0.5 above: Winkler 2 + (2/0.2)·0.5 = 7; the
	// others cover: 2, 3 and 4; value 3 is unbounded.
	want := KindSummary{Kind: "jackknife_plus", Coverage: 0.8, CoveragePerStep: []float64{1, 2.0 / 3}, JointCoverage: 2.0 / 3, Sequences: 3,
		MeanLength: 2.75, LengthPerStep: []float64{2.5, 3}, Infinite: 1, IntervalScore: 4,
		// Low 1: flagged values 2 (0 < 1, y 0.5 real) and 3 (-Inf, y 2
		// not). High 9: flagged value 4 (12, y 10 real); value 1 (y 9.5)
		// is real but not flagged.
		Audit: Audit{Low: &Threshold{Threshold: 1, Precision: 0.5, Recall: 1, Flagged: 2, True: 1, Actual: 1},
			High: &Threshold{Threshold: 9, Precision: 1, Recall: 0.5, Flagged: 1, True: 1, Actual: 2}}}
	checkKind(t, k, want)

	// Coverage is the caller's: a value it calls covered counts so, and
	// without thresholds there are no flags.
	m = NewMetrics(0.1, nil, nil, 1)
	m.Add(0, 0, 2, 1, 1, true)
	if k := m.Summary("split_conformal"); k.Coverage != 1 || k.Audit.Low != nil || k.Audit.High != nil {
		t.Errorf("coverage %v audit %+v, want 1 and no thresholds", k.Coverage, k.Audit)
	}
}

func checkKind(t *testing.T, got, want KindSummary) {
	t.Helper()
	fl := func(name string, g, w float64) {
		if !near(g, w) {
			t.Errorf("%s %v, want %v", name, g, w)
		}
	}
	fl("coverage", got.Coverage, want.Coverage)
	fl("joint coverage", got.JointCoverage, want.JointCoverage)
	fl("mean length", got.MeanLength, want.MeanLength)
	fl("interval score", got.IntervalScore, want.IntervalScore)
	if got.Kind != want.Kind || got.Sequences != want.Sequences || got.Infinite != want.Infinite ||
		!slices.EqualFunc(got.CoveragePerStep, want.CoveragePerStep, near) || !slices.EqualFunc(got.LengthPerStep, want.LengthPerStep, near) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, c := range []struct{ g, w *Threshold }{{got.Audit.Low, want.Audit.Low}, {got.Audit.High, want.Audit.High}} {
		if (c.g == nil) != (c.w == nil) || (c.g != nil && *c.g != *c.w) {
			t.Errorf("threshold %+v, want %+v", c.g, c.w)
		}
	}
}
