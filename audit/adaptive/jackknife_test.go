package adaptive

import (
	"math"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// TestJackknifeLevel checks the jackknife+ interval at a working level on
// hand-worked sets of m = 9 blocks (the lower limit is the floor(a(m+1))-th
// smallest of V-, the upper the ceil((1-a)(m+1))-th smallest of V+).
func TestJackknifeLevel(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	// Predictions 0 at every block, residuals 2, 4, ..., 18 below and
	// 1, ..., 9 above (two residual sets, as pooled ones may differ by
	// side through NaN blocks; here by construction).
	vm := []float64{-18, -16, -14, -12, -10, -8, -6, -4, -2}
	vp := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct {
		a, lo, up float64
		empty     bool
	}{
		{0.1, -18, 9, false},     // floor(1) = 1, ceil(9) = 9
		{0.2, -16, 8, false},     // floor(2) = 2, ceil(8) = 8
		{0.05, -inf, inf, false}, // floor(0.5) = 0, ceil(9.5) = 10 > 9
		{0.15, -18, 9, false},    // floor(1.5) = 1, ceil(8.5) = 9
		{0.55, -10, 5, false},    // floor(5.5) = 5, ceil(4.5) = 5
		{0.85, -4, 2, false},     // floor(8.5) = 8, ceil(1.5) = 2
		{0, -inf, inf, false},
		{-0.2, -inf, inf, false},
		{1, 0, 0, true},
		{1.3, 0, 0, true},
	} {
		lo, up, empty := jackknifeLevel(0, c.a, vm, vp)
		if lo != c.lo || up != c.up || empty != c.empty {
			t.Errorf("a = %g: [%g, %g] empty %v, want [%g, %g] empty %v", c.a, lo, up, empty, c.lo, c.up, c.empty)
		}
	}
	// Block predictions 1..9 with residual 0.5: V- = b - 0.5, V+ = b + 0.5.
	// At a = 0.7 the lower limit is the floor(7) = 7th of V-, 6.5, above
	// the upper, the ceil(3) = 3rd of V+, 3.5: the interval is empty.
	vm2 := []float64{0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5}
	vp2 := []float64{1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5}
	if lo, up, empty := jackknifeLevel(5, 0.55, vm2, vp2); lo != 4.5 || up != 5.5 || empty {
		t.Errorf("a = 0.55: [%g, %g] empty %v, want [4.5, 5.5]", lo, up, empty)
	}
	if lo, up, empty := jackknifeLevel(5, 0.7, vm2, vp2); lo != 5 || up != 5 || !empty {
		t.Errorf("a = 0.7: [%g, %g] empty %v, want empty at the prediction 5", lo, up, empty)
	}
	// At the audit's own level it is jackknifePlus's interval.
	for _, a := range []float64{0.1, 0.2, 0.3} {
		lo, up, _ := jackknifeLevel(0, a, vm, vp)
		wlo, wup := interval.JackknifePlus(a, slices.Clone(vm), slices.Clone(vp))
		if lo != wlo || up != wup {
			t.Errorf("a = %g: [%g, %g], jackknifePlus [%g, %g]", a, lo, up, wlo, wup)
		}
	}
	if lo, up := jackknifeWidest([]float64{math.Inf(-1), -3, 1}, []float64{2, 4, inf}); lo != -3 || up != 4 {
		t.Errorf("widest [%g, %g], want [-3, 4]", lo, up)
	}
}

// TestACIJackknifeHandWorked runs ACI and one-expert AgACI on the
// jackknife base with the asymmetric sets of TestJackknifeLevel at every
// forecast (alpha 0.1, gamma 0.05) and the targets of TestACIHandWorked:
//
//	t=1: alpha 0.1: [-18, 9]; y = 10 misses: alpha 0.055
//	t=2..10: floor(0.55..0.95) = 0: unbounded, y = 100 covered, +0.005 each
//	t=11: alpha 0.1: [-18, 9], y = 0.5 covered: 0.105
//	t=12: floor(1.05) = 1, ceil(8.95) = 9: [-18, 9]
//	t=32: alpha 0.205: floor(2.05) = 2, ceil(7.95) = 8: [-16, 8].
//
// The scaled interval would have kept the shape [-2q, q] of the limits at
// alpha instead, and the base scores would have mattered; here no
// scores are given (fixed returns none), and none are needed.
func TestACIJackknifeHandWorked(t *testing.T) {
	t.Parallel()
	vm := []float64{-18, -16, -14, -12, -10, -8, -6, -4, -2}
	vp := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	y := []float64{10, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0.5, 0.5}
	y = append(y, slices.Repeat([]float64{0.5}, 20)...)
	pts, ch := oneChain(y)
	o, err := Options{Gamma: 0.05, Grid: []float64{0.05}, Base: BaseJackknife}.WithDefaults(0.1)
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]Step, len(pts))
	sets := func(int) ([]float64, []float64) { return vm, vp }
	Run(o, 0.1, pts, ch, Base{Scores: func(int) []float64 { return nil }, Sets: sets}, steps)
	inf := math.Inf(1)
	want := map[int][3]float64{ // t: alpha, lower, upper
		1: {0.1, -18, 9}, 2: {0.055, -inf, inf}, 10: {0.095, -inf, inf},
		11: {0.1, -18, 9}, 12: {0.105, -18, 9}, 32: {0.205, -16, 8},
	}
	for tt, w := range want {
		st := steps[tt-1]
		if math.Abs(st.Alpha-w[0]) > 1e-12 || st.ACILower != w[1] || st.ACIUpper != w[2] {
			t.Errorf("t=%d: alpha %g, ACI [%g, %g]; want alpha %g, [%g, %g]", tt, st.Alpha, st.ACILower, st.ACIUpper, w[0], w[1], w[2])
		}
	}
	// One-expert AgACI is the expert where finite, and aggregates
	// unbounded limits at the widest finite member [-18, 9].
	for i, st := range steps {
		lo, up := math.Max(st.ACILower, -18), math.Min(st.ACIUpper, 9)
		if math.Abs(st.AgACILower-lo) > 1e-12 || math.Abs(st.AgACIUpper-up) > 1e-12 {
			t.Errorf("t=%d: AgACI [%g, %g], want [%g, %g]", i+1, st.AgACILower, st.AgACIUpper, lo, up)
		}
	}
}
