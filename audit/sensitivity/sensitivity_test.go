package sensitivity

import (
	"math"
	"slices"
	"testing"
)

// TestShareSE: the ratio estimator's standard error worked by hand. Two
// of four sequences, own widths b = (1, 3), re-run a = (2, 2): R =
// 4/4 = 1, residuals a - R b = (1, -1), sum of squares 2; se = sqrt((1 -
// 2/4) / (2 * 1) * 2) / (4 / 2) = sqrt(0.5) / 2.
func TestShareSE(t *testing.T) {
	if got, want := ShareSE([]float64{2, 2}, []float64{1, 3}, 4), math.Sqrt(0.5)/2; math.Abs(got-want) > 1e-15 {
		t.Errorf("ShareSE = %g, want %g", got, want)
	}
	if got := ShareSE([]float64{2, 2}, []float64{1, 3}, 2); got != 0 {
		t.Errorf("every sequence seen: ShareSE = %g, want 0", got)
	}
	if got := ShareSE([]float64{2}, []float64{1}, 5); !math.IsNaN(got) {
		t.Errorf("one sequence: ShareSE = %g, want NaN", got)
	}
	// Proportional re-run widths: no spread, no error.
	if got := ShareSE([]float64{2, 6, 4}, []float64{1, 3, 2}, 10); got != 0 {
		t.Errorf("proportional: ShareSE = %g, want 0", got)
	}
}

// TestPairedSE: points summed per cluster, unlabelled and unbounded
// ones left out; the sums of TestShareSE's clusters give its figure.
func TestPairedSE(t *testing.T) {
	inf := math.Inf(1)
	cluster := []int{0, 0, 1, 1, 1}
	has := []bool{true, true, true, false, true}
	lo0, up0 := []float64{0, 0, 0, 0, 0}, []float64{0.5, 0.5, 3, 9, 1}
	lo, up := []float64{0, 0, 0, 0, 0}, []float64{1, 1, 2, 9, inf}
	if got, want := PairedSE(cluster, has, lo0, up0, lo, up, 2, 4), math.Sqrt(0.5)/2; math.Abs(got-want) > 1e-15 {
		t.Errorf("PairedSE = %g, want %g", got, want)
	}
}

// TestSample: m distinct sorted indices below n, all of them when m >= n,
// the same for the same seed.
func TestSample(t *testing.T) {
	s := Sample(100, 10, 7)
	if len(s) != 10 || !slices.IsSorted(s) || s[0] < 0 || s[9] >= 100 || len(slices.Compact(slices.Clone(s))) != 10 {
		t.Errorf("Sample(100, 10) = %v", s)
	}
	if !slices.Equal(s, Sample(100, 10, 7)) {
		t.Error("Sample is not deterministic")
	}
	if got := Sample(3, 5, 1); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("Sample(3, 5) = %v", got)
	}
}

// TestWidthShare: the share is taken against the sample's own width when
// the re-runs ran on a sample, and its error is that of the larger move.
func TestWidthShare(t *testing.T) {
	d := &Damping{Computed: true, Width: 2, Low: Figures{MeanLength: 2.2, ShareSE: 0.01}, High: Figures{MeanLength: 1.5, ShareSE: 0.03}}
	if got := d.WidthShare(); math.Abs(got-0.25) > 1e-15 {
		t.Errorf("WidthShare = %g, want 0.25", got)
	}
	d.Sampled, d.Sequences, d.SampleWidth = 10, 100, 1
	if got := d.WidthShare(); math.Abs(got-1.2) > 1e-15 || d.WidthShareSE() != 0.01 {
		t.Errorf("sampled: WidthShare = %g (want 1.2), SE %g (want 0.01)", got, d.WidthShareSE())
	}
}
