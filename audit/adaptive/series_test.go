package adaptive

import (
	"math"
	"testing"
)

// TestUnderCovering checks the per-series under-coverage of an adaptive
// kind on hand-worked series of 30 values at nominal 0.9 and lag 0: the
// tolerance is 2 sqrt(0.09/30) = 0.110, so 23 covered (0.767) is below
// 0.9 - 0.110, 26 (0.867) is not; the under-covering series covers its
// first 10 and 3 of its last 10 (thirds' tolerance 2 sqrt(0.09 × 2/10)
// = 0.268 < 0.7: a drift). Series of fewer than six values are not judged.
func TestUnderCovering(t *testing.T) {
	t.Parallel()
	series := func(ones []int, n int) []float64 {
		h := make([]float64, n)
		for _, i := range ones {
			h[i] = 1
		}
		return h
	}
	var under, fine []int
	for i := range 30 {
		if i < 20 || i >= 27 { // 20 + 3 = 23 covered: all of the first 10, 3 of the last 10
			under = append(under, i)
		}
		if i != 3 && i != 13 && i != 23 && i != 27 {
			fine = append(fine, i) // 26 covered
		}
	}
	got := underCovering([]string{"A", "B", "C"}, [][]float64{series(fine, 30), series(under, 30), {0, 0, 0, 0, 0}}, 0.9, 0)
	if len(got) != 1 || got[0].ID != "B" || got[0].Points != 30 || math.Abs(got[0].Coverage-23.0/30) > 1e-12 ||
		math.Abs(got[0].Tolerance-2*math.Sqrt(0.09/30)) > 1e-12 || got[0].Early != 1 || math.Abs(got[0].Late-0.3) > 1e-12 || !got[0].Drift {
		t.Errorf("under-covering %+v, want B at 23/30 drifting from 1 to 0.3", got)
	}
}

// TestAlong: a kind's figures along two chains of 6 labelled forecasts
// and one unlabelled, at nominal 0.9 (tolerance 2 sqrt(0.09/6) = 0.245
// at lag 0): B covers none of its forecasts, so its windows of 3 cover 0
// and it under-covers; A covers 5 of 6 (its first interval is empty),
// within tolerance. The empty interval of an unlabelled forecast is not
// counted. With one chain no series is listed.
func TestAlong(t *testing.T) {
	t.Parallel()
	fc := make([]Forecast, 13)
	chains := []Chain{{}, {}}
	lo, up := make([]float64, 13), make([]float64, 13)
	for i := range 12 {
		fc[i] = Forecast{Y: 0, Labelled: true}
		if i >= 6 {
			fc[i].Y = 5 // outside [0, 0]
		}
		chains[i/6].Points = append(chains[i/6].Points, i)
	}
	chains[1].Points = append(chains[1].Points, 12) // unlabelled
	empty := make([]bool, 13)
	empty[12], empty[0] = true, true
	k := Along(fc, chains, []string{"A", "B"}, lo, up, empty, 3, 0.9, 0)
	if k.WorstWindow != 0 || k.Windows != 2 || k.Empty != 1 || len(k.Under) != 1 || k.Under[0].ID != "B" || k.Under[0].Coverage != 0 {
		t.Errorf("figures %+v: want worst 0 over 2 series, 1 empty, B (0/6) under", k)
	}
	if k := Along(fc, chains[:1], []string{"A"}, lo, up, nil, 3, 0.9, 0); k.Under != nil || k.Empty != 0 || k.WorstWindow != 1 || k.Windows != 1 {
		t.Errorf("one chain: %+v, want no series listed, no empty, worst 1 over 1 series", k)
	}
}
