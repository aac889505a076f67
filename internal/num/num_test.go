package num

import (
	"math"
	"slices"
	"testing"
)

// TestLag1: hand-worked pooled lag-1 autocorrelations.
func TestLag1(t *testing.T) {
	for _, tc := range []struct {
		series [][]float64
		want   float64
		pairs  int
	}{
		// Mean 2.5, deviations -1.5 -0.5 0.5 1.5: (0.75 - 0.25 + 0.75) / 5.
		{[][]float64{{1, 2, 3, 4}}, 0.25, 3},
		// Mean 2 over both runs; no pair across them: (-1 - 1) / 4.
		{[][]float64{{1, 3}, {3, 1}}, -0.5, 2},
		{[][]float64{{1}, {2}}, math.NaN(), 0},
	} {
		got, pairs := Lag1(slices.Values(tc.series))
		if pairs != tc.pairs || !(math.Abs(got-tc.want) < 1e-15 || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("Lag1(%v) = %v, %d pairs; want %v, %d", tc.series, got, pairs, tc.want, tc.pairs)
		}
	}
}

// TestSubCosine: the difference and the cosine on hand-worked vectors;
// the cosine with a zero vector is NaN.
func TestSubCosine(t *testing.T) {
	if d := Sub([]float64{3, 1}, []float64{1, 4}); d[0] != 2 || d[1] != -3 {
		t.Errorf("Sub = %v, want [2 -3]", d)
	}
	if c := Cosine([]float64{1, 0}, []float64{1, 1}); math.Abs(c-1/math.Sqrt2) > 1e-15 {
		t.Errorf("Cosine = %v, want 1/sqrt 2", c)
	}
	if c := Cosine([]float64{3, 4}, []float64{-6, -8}); math.Abs(c+1) > 1e-15 {
		t.Errorf("Cosine of opposite vectors = %v, want -1", c)
	}
	if c := Cosine([]float64{0, 0}, []float64{1, 1}); !math.IsNaN(c) {
		t.Errorf("Cosine with a zero vector = %v, want NaN", c)
	}
}
