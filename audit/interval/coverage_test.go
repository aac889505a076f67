package interval

import (
	"math"
	"slices"
	"testing"
)

// grid is the calibration curve's grid of levels.
var grid = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}

// TestCountCovered: five values, V- = 8.1 9.3 9.4 9.5 9.6 and V+ = 9.9
// 10.0 10.5 11.4 12.1 (in another order). Over the grid the jackknife+
// ranks of m = 5 give: alpha 0.05-0.15 unbounded; 0.2-0.3 [8.1, 12.1];
// 0.35-0.45 [9.3, 11.4]; 0.5 [9.4, 10.5]. The counts agree with the
// limits JackknifePlus selects at every level.
func TestCountCovered(t *testing.T) {
	vm := []float64{9.5, 9.4, 9.6, 8.1, 9.3}
	vp := []float64{10.5, 11.4, 10.0, 12.1, 9.9}
	for _, c := range []struct {
		y    float64
		hits []int
	}{
		{11, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
		{12, []int{1, 1, 1, 1, 1, 1, 0, 0, 0, 0}},
		{9, []int{1, 1, 1, 1, 1, 1, 0, 0, 0, 0}},
		{13, []int{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
	} {
		hits := make([]int, len(grid))
		CountCovered(grid, c.y, vm, vp, hits)
		if !slices.Equal(hits, c.hits) {
			t.Errorf("y %v: covered %v, want %v", c.y, hits, c.hits)
		}
		for a, alpha := range grid {
			lo, up := JackknifePlus(alpha, slices.Clone(vm), slices.Clone(vp))
			if in := lo <= c.y && c.y <= up; in != (c.hits[a] == 1) {
				t.Errorf("y %v alpha %v: limits [%v, %v], counted %d", c.y, alpha, lo, up, c.hits[a])
			}
		}
	}
	// A NaN value counts on neither side: with V+ = NaN everywhere no
	// value lies below y, so only the lower side decides.
	nan := math.NaN()
	hits := make([]int, len(grid))
	CountCovered(grid, 11, vm, []float64{nan, nan, nan, nan, nan}, hits)
	if want := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}; !slices.Equal(hits, want) {
		t.Errorf("NaN V+: covered %v, want %v", hits, want)
	}
}

// TestCurve: counts of several ranges add up, over the total labelled.
func TestCurve(t *testing.T) {
	alphas := []float64{0.1, 0.5}
	c := Curve(alphas, [][]int{{3, 1}, nil, {1, 0}}, 4)
	want := []CalibrationPoint{{0.1, 0.9, 1}, {0.5, 0.5, 0.25}}
	if !slices.Equal(c, want) {
		t.Errorf("curve %v, want %v", c, want)
	}
	if c := Curve(alphas, nil, 0); !math.IsNaN(c[0].Coverage) {
		t.Errorf("curve without values: %v, want NaN coverage", c)
	}
}

// TestCoverageTolerance: two binomial standard errors, at least one
// point.
func TestCoverageTolerance(t *testing.T) {
	if got := CoverageTolerance(0.9, 100); !near(got, 0.06) {
		t.Errorf("0.9 over 100: %v, want 0.06", got)
	}
	if got := CoverageTolerance(0.9, 1e6); got != 0.01 {
		t.Errorf("0.9 over a million: %v, want the floor 0.01", got)
	}
	if got := CoverageTolerance(0.5, 0); !near(got, 1) {
		t.Errorf("no values: %v, want 2·sqrt(0.25) = 1", got)
	}
}

// TestShortSteps: at floor 0.8 over 100 values the tolerance is 0.08, so
// 0.71 is short and 0.73 is not; rows with fewer than minValues values
// are not judged however low.
func TestShortSteps(t *testing.T) {
	cov := []float64{0.71, 0.73, 0.1, 0.5, 0.9}
	n := []int{100, 100, 19, 20, 100}
	if got := ShortSteps(cov, n, 0.8, 20); !slices.Equal(got, []int{0, 3}) {
		t.Errorf("short steps %v, want [0 3]", got)
	}
	if got := ShortSteps(cov, n, 0.5, 20); got != nil {
		t.Errorf("short steps at floor 0.5: %v, want none", got)
	}
}
