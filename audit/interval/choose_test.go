package interval

import (
	"math"
	"testing"
)

// TestCalibrationFigures counts five calibration values by hand: row 0
// has [0, 2] around 1 (covered, width 2) and [0, 1] around 3 (missed,
// width 1); row 2 has an unbounded interval (covered, no width) and [1, 4]
// around 4 (covered, width 3), row 1 none. Coverage 3/4, per row 1/2, NaN,
// 1; mean width (2 + 1 + 3) / 3 = 2 over the bounded three.
func TestCalibrationFigures(t *testing.T) {
	t.Parallel()
	var f CalibrationFigures
	f.Add(0, 1, 0, 2)
	f.Add(0, 3, 0, 1)
	f.Add(2, 5, math.Inf(-1), math.Inf(1))
	f.Add(2, 4, 1, 4)
	f.Finish()
	if f.Values != 4 || f.Unbounded != 1 || f.Coverage != 0.75 || f.MeanWidth != 2 {
		t.Errorf("values %d unbounded %d coverage %g width %g, want 4 1 0.75 2", f.Values, f.Unbounded, f.Coverage, f.MeanWidth)
	}
	if len(f.CoveragePerStep) != 3 || f.CoveragePerStep[0] != 0.5 || !math.IsNaN(f.CoveragePerStep[1]) || f.CoveragePerStep[2] != 1 {
		t.Errorf("per step %v, want [0.5 NaN 1]", f.CoveragePerStep)
	}
}

// uniform is a kind with n values at each of rows rows, all with the same
// coverage, except at row short with coverage at.
func uniform(kind string, guaranteed bool, rows, n int, cov, width float64, unbounded, short int, at float64) CalibrationFigures {
	f := CalibrationFigures{Kind: kind, Guaranteed: guaranteed, Values: rows * n, MeanWidth: width, Unbounded: unbounded}
	sum := 0.0
	for t := range rows {
		c := cov
		if t == short {
			c = at
		}
		f.CoveragePerStep = append(f.CoveragePerStep, c)
		f.ValuesPerStep = append(f.ValuesPerStep, n)
		sum += c
	}
	f.Coverage = sum / float64(rows)
	return f
}

// TestChoose checks Holds and Choose against bounds worked by hand for 10
// rows of 100 values at alpha 0.1: pooled 0.9 - 2 sqrt(0.09/1000) =
// 0.8810, a row 0.9 - 3 sqrt(0.09/100) = 0.81.
func TestChoose(t *testing.T) {
	t.Parallel()
	rule := StepRule{Z: 3, Floor: 0.01, MinValues: 20}
	split := uniform(KindSplit, true, 10, 100, 0.9, 2, 0, -1, 0)
	cj := uniform(KindConformalJackknife, true, 10, 100, 0.9, 2.1, 0, -1, 0)
	for _, tc := range []struct {
		name string
		jk   CalibrationFigures
		ok   bool
		step int
		want string
	}{
		{"narrowest and holding", uniform(KindJackknife, false, 10, 100, 0.9, 1.5, 0, -1, 0), true, -1, KindJackknife},
		{"a row at 0.82 is within 0.81", uniform(KindJackknife, false, 10, 100, 0.9, 1.5, 0, 4, 0.82), true, -1, KindJackknife},
		{"a row at 0.80 fails", uniform(KindJackknife, false, 10, 100, 0.9, 1.5, 0, 4, 0.80), false, 4, KindSplit},
		{"pooled 0.88 fails", uniform(KindJackknife, false, 10, 100, 0.88, 1.5, 0, -1, 0), false, -1, KindSplit},
		{"rows with fewer than 20 values are not judged", uniform(KindJackknife, false, 100, 19, 0.9, 1.5, 0, 4, 0), true, -1, KindJackknife},
		{"wider than split", uniform(KindJackknife, false, 10, 100, 0.95, 2.5, 0, -1, 0), true, -1, KindSplit},
	} {
		ok, step, _ := tc.jk.Holds(0.1, rule)
		if ok != tc.ok || step != tc.step {
			t.Errorf("%s: holds %v at %d, want %v at %d", tc.name, ok, step, tc.ok, tc.step)
		}
		figs := []CalibrationFigures{tc.jk, cj, split}
		if b := Choose(figs, 0.1, rule); b < 0 || figs[b].Kind != tc.want {
			t.Errorf("%s: chose %d, want %s", tc.name, b, tc.want)
		}
	}
	// Fewer unbounded intervals first; a kind all unbounded never.
	unb := uniform(KindSplit, true, 10, 100, 0.9, 1, 5, -1, 0)
	if b := Choose([]CalibrationFigures{unb, cj}, 0.1, rule); b != 1 {
		t.Errorf("chose %d over the kind with no unbounded interval", b)
	}
	all := uniform(KindSplit, true, 10, 100, 1, math.NaN(), 1000, -1, 0)
	if b := Choose([]CalibrationFigures{all}, 0.1, rule); b != -1 {
		t.Errorf("chose an all-unbounded kind: %d", b)
	}
}

// TestChooseStrict checks the Strict rule of a calibration stretch: one
// row of 320 values at alpha 0.1, where the tolerance is 0.9 - 2
// sqrt(0.09/320) = 0.8665. The jackknife+ at 0.884 (the figure of
// benchmarks/windows) holds within it, and is chosen as the narrowest,
// but not under Strict, which then chooses split conformal; at 0.9 it
// holds under both; a guaranteed kind holds under Strict whatever its
// figure.
func TestChooseStrict(t *testing.T) {
	t.Parallel()
	lenient := StepRule{Z: 3, Floor: 0.01, MinValues: 20}
	strict := lenient
	strict.Strict = true
	split := uniform(KindSplit, true, 1, 320, 0.85, 1.617, 0, -1, 0)
	for _, tc := range []struct {
		cov            float64
		lenient, strct string
	}{
		{0.884, KindJackknife, KindSplit},
		{0.9, KindJackknife, KindJackknife},
		{0.86, KindSplit, KindSplit},
	} {
		figs := []CalibrationFigures{uniform(KindJackknife, false, 1, 320, tc.cov, 1.434, 0, -1, 0), split}
		if b := Choose(figs, 0.1, lenient); figs[b].Kind != tc.lenient {
			t.Errorf("coverage %g: chose %s, want %s", tc.cov, figs[b].Kind, tc.lenient)
		}
		if b := Choose(figs, 0.1, strict); figs[b].Kind != tc.strct {
			t.Errorf("coverage %g, strict: chose %s, want %s", tc.cov, figs[b].Kind, tc.strct)
		}
	}
	if ok, _, _ := split.Holds(0.1, strict); !ok {
		t.Errorf("a guaranteed kind at 0.85 does not hold under Strict")
	}
}
