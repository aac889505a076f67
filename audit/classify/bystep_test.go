package classify

import (
	"math"
	"testing"
)

// TestByStep: coverage and mean set size by row, worked by hand. Row 0:
// sets {1} (label 1, covered) and {0, 1} (label 0, covered): coverage 1,
// size 1.5. Row 1: no labelled forecast (N 0, NaN). Row 2: {0} with
// label 1 (not covered): coverage 0, size 1. An unlabelled forecast at
// row 3 adds no row.
func TestByStep(t *testing.T) {
	fs := []Forecast{
		{Probs: BinaryProbs(0.9), Set: []int{1}, Label: 1, Row: 0},
		{Probs: BinaryProbs(0.5), Set: []int{0, 1}, Label: 0, Row: 0},
		{Probs: BinaryProbs(0.2), Set: []int{0}, Label: 1, Row: 2},
		{Probs: BinaryProbs(0.2), Set: []int{0}, Label: -1, Row: 3},
	}
	got := ByStep(fs, func(f Forecast) []int { return f.Set })
	if len(got) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(got), got)
	}
	want := []Cell{{0, 2, 1, 1.5}, {1, 0, math.NaN(), math.NaN()}, {2, 1, 0, 1}}
	for k, w := range want {
		g := got[k]
		same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
		if g.Key != w.Key || g.N != w.N || !same(g.Coverage, w.Coverage) || !same(g.MeanSize, w.MeanSize) {
			t.Errorf("row %d: %+v, want %+v", k, g, w)
		}
	}
	s := Summarize(fs, 0.1, LAC, nil, nil)
	if len(s.Jackknife.ByStep) != 3 || s.Split != nil {
		t.Errorf("Summarize: %d rows by step, split %v", len(s.Jackknife.ByStep), s.Split)
	}
}
