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
	got := UnderCovering([]string{"A", "B", "C"}, [][]float64{series(fine, 30), series(under, 30), {0, 0, 0, 0, 0}}, 0.9, 0)
	if len(got) != 1 || got[0].ID != "B" || got[0].Points != 30 || math.Abs(got[0].Coverage-23.0/30) > 1e-12 ||
		math.Abs(got[0].Tolerance-2*math.Sqrt(0.09/30)) > 1e-12 || got[0].Early != 1 || math.Abs(got[0].Late-0.3) > 1e-12 || !got[0].Drift {
		t.Errorf("under-covering %+v, want B at 23/30 drifting from 1 to 0.3", got)
	}
}
