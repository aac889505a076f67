package interval

import (
	"math"
	"testing"
)

// TestPredictionSD works the spread by hand: 1, 2, 3, 4 (NaN and +Inf
// left out) have mean 2.5 and squared deviations 2.25, 0.25, 0.25, 2.25,
// so the variance is 5/4 and the spread sqrt(1.25); one finite value has
// no spread.
func TestPredictionSD(t *testing.T) {
	t.Parallel()
	if got := PredictionSD([]float64{1, math.NaN(), 2, 3, math.Inf(1), 4}); math.Abs(got-math.Sqrt(1.25)) > 1e-15 {
		t.Errorf("spread %v, want sqrt(1.25)", got)
	}
	if got := PredictionSD([]float64{7, math.NaN()}); !math.IsNaN(got) {
		t.Errorf("one value: %v, want NaN", got)
	}
}

// TestNormalisedQuantile works normalised split conformal by hand at
// alpha 0.2 on nine calibration values with prediction 0: |y| = 1..9 at
// scales 1, 1, 1, 1, 1, 1, 1, 1, 10 give scores 1..8 and 0.9; the
// conformal rank ceil(0.8 x 10) = 8 picks 7 (sorted 0.9, 1, 2, ..., 8),
// where plain split conformal picks 8 of |y| 1..9: the value far off
// came with a wide scale. A test forecast at 5 with scale 0.5 gets 5 ±
// 3.5, one with scale 2 gets 5 ± 14: the interval follows the scale.
func TestNormalisedQuantile(t *testing.T) {
	t.Parallel()
	var scores []float64
	for k := 1; k <= 9; k++ {
		s := 1.0
		if k == 9 {
			s = 10
		}
		scores = append(scores, NormalisedScore(0, s, float64(k)))
	}
	q := UpperQuantile(0.2, scores)
	if q != 7 {
		t.Fatalf("quantile %v, want 7", q)
	}
	// The limits hold the hand-worked ones, rounded outwards by a few
	// units in the last place and no more.
	near := func(lo, up, wlo, wup float64) bool {
		return lo <= wlo && up >= wup && wlo-lo <= 1e-14*math.Abs(wlo) && up-wup <= 1e-14*math.Abs(wup)
	}
	if lo, up := NormalisedLimits(5, 0.5, q); !near(lo, up, 1.5, 8.5) {
		t.Errorf("scale 0.5: [%v, %v], want [1.5, 8.5]", lo, up)
	}
	if lo, up := NormalisedLimits(5, 2, q); !near(lo, up, -9, 19) {
		t.Errorf("scale 2: [%v, %v], want [-9, 19]", lo, up)
	}
	// The value whose score is the quantile is inside the interval its
	// quantile makes, whatever the rounding of the score and the product
	// (the first four fall just outside f ± q s unwidened).
	for _, c := range [][3]float64{{22.86, 0.426, -4.58}, {3.23, 0.158, 1.59}, {-10.73, 0.22, 4.32}, {-14.56, 0.363, -2.95}, {0.1, 0.3, 0.7}} {
		f, s, y := c[0], c[1], c[2]
		if lo, up := NormalisedLimits(f, s, NormalisedScore(f, s, y)); !(lo <= y && y <= up) {
			t.Errorf("f %v, scale %v: %v outside [%v, %v], the interval of its own score", f, s, y, lo, up)
		}
	}
	// A zero scale: a value off the prediction cannot be reached, one on
	// it scores 0; an unbounded quantile or an unknown scale gives the
	// whole line.
	if NormalisedScore(1, 0, 2) != math.Inf(1) || NormalisedScore(1, 0, 1) != 0 || NormalisedScore(0, math.NaN(), 1) != math.Inf(1) {
		t.Error("scores at a zero or unknown scale")
	}
	if lo, up := NormalisedLimits(0, math.NaN(), 1); !math.IsInf(lo, -1) || !math.IsInf(up, 1) {
		t.Errorf("unknown scale: [%v, %v]", lo, up)
	}
	if lo, up := NormalisedLimits(0, 1, math.Inf(1)); !math.IsInf(lo, -1) || !math.IsInf(up, 1) {
		t.Errorf("unbounded quantile: [%v, %v]", lo, up)
	}
}
