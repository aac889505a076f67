package adaptive

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// TestQuantileAt checks the conformal quantile at a working level on
// hand-worked cases: the rank ceil((1-a)(m+1)), +Inf at a <= 0 and beyond
// m, -Inf (empty) at a >= 1.
func TestQuantileAt(t *testing.T) {
	t.Parallel()
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct {
		a, want float64
	}{
		{0.1, 9},            // ceil(0.9 × 10) = 9
		{0.2, 8},            // ceil(0.8 × 10) = 8
		{0.55, 5},           // ceil(4.5) = 5
		{0.05, math.Inf(1)}, // ceil(9.5) = 10 > 9
		{0, math.Inf(1)},
		{-0.3, math.Inf(1)},
		{0.95, 1}, // ceil(0.5) = 1
		{1, math.Inf(-1)},
		{1.2, math.Inf(-1)},
	} {
		if got := quantileAt(c.a, s); got != c.want {
			t.Errorf("quantileAt(%g) = %g, want %g", c.a, got, c.want)
		}
	}
	if got := quantileAt(0.5, nil); !math.IsInf(got, 1) {
		t.Errorf("quantileAt with no scores = %g, want +Inf", got)
	}
}

// TestNexCPQuantile checks the weighted quantile on a hand-worked case
// and that rho = 1 gives the split-conformal quantile.
func TestNexCPQuantile(t *testing.T) {
	t.Parallel()
	// Scores 1, 2, 3 (oldest first), rho = 0.5: weights 0.125, 0.25, 0.5,
	// and 1 on +Inf; total 1.875. The cumulative weights of the sorted
	// scores are 0.125, 0.375, 0.875.
	s := []float64{1, 2, 3}
	for _, c := range []struct {
		alpha, want float64
	}{
		{0.5, math.Inf(1)}, // needs 0.9375
		{0.6, 3},           // needs 0.75
		{0.85, 2},          // needs 0.28125
		{0.95, 1},          // needs 0.09375
	} {
		if got, _ := nexcpQuantile(c.alpha, 0.5, s, nil); got != c.want {
			t.Errorf("alpha %g: nexcpQuantile = %g, want %g", c.alpha, got, c.want)
		}
	}
	// Order matters: the newest score weighs most. Scores 3, 2, 1: weights
	// 0.125 (3), 0.25 (2), 0.5 (1); cumulative 0.5, 0.75, 0.875.
	if got, _ := nexcpQuantile(0.6, 0.5, []float64{3, 2, 1}, nil); got != 2 {
		t.Errorf("reversed scores: nexcpQuantile = %g, want 2", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []wscore
	for trial := range 200 {
		n := 1 + rng.IntN(40)
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Round(10 * rng.ExpFloat64()) // ties too
		}
		alpha := []float64{0.05, 0.1, 0.2, 0.5}[trial%4]
		var got float64
		got, buf = nexcpQuantile(alpha, 1, v, buf)
		if want := interval.UpperQuantile(alpha, v); got != want {
			t.Fatalf("trial %d: rho 1 gives %g, split conformal %g (scores %v, alpha %g)", trial, got, want, v, alpha)
		}
	}
}

// TestBOAFirstStep checks one step of Bernstein online aggregation by
// hand: experts 0 and 2, uniform weights, aggregate 1, pinball level 0.5,
// y = 2: gradient -0.5, regrets -0.5 and +0.5, B = 0.5, eta = min(1,
// sqrt(ln 2 / 0.25)) = 1, regularised regrets -0.75 and 0.25, weights
// proportional to exp(-0.75) and exp(0.25): the second is 1/(1+e^-1).
func TestBOAFirstStep(t *testing.T) {
	t.Parallel()
	a := newBOA(2)
	x := []float64{0, 2}
	pred := a.predict(x)
	if pred != 1 {
		t.Fatalf("first aggregate %g, want 1", pred)
	}
	a.update(x, pred, pinballGrad(0.5, pred, 2))
	want := 1 / (1 + math.Exp(-1))
	if math.Abs(a.w[1]-want) > 1e-12 || math.Abs(a.w[0]+a.w[1]-1) > 1e-12 {
		t.Errorf("weights %v, want [%g %g]", a.w, 1-want, want)
	}
}

// TestBOAFindsTheQuantile: three constant experts 0.5, 0.9 and 0.99 for
// the 0.9-quantile of uniform values; the aggregate settles near 0.9 (the
// pinball loss's minimiser among the experts' mixtures).
func TestBOAFindsTheQuantile(t *testing.T) {
	t.Parallel()
	a := newBOA(3)
	x := []float64{0.5, 0.9, 0.99}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		pred := a.predict(x)
		a.update(x, pred, pinballGrad(0.9, pred, rng.Float64()))
	}
	if got := a.predict(x); math.Abs(got-0.9) > 0.02 {
		t.Errorf("aggregate after 5000 steps %g (weights %v), want 0.9 ± 0.02", got, a.w)
	}
}

// TestSortedWindow checks the moving window against a sort of its last n
// scores.
func TestSortedWindow(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 3, 10} {
		w := sortedWindow{n: n}
		var all []float64
		for range 60 {
			s := math.Round(5 * rng.Float64())
			w.add(s)
			all = append(all, s)
			want := all
			if n > 0 && len(want) > n {
				want = want[len(want)-n:]
			}
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(w.sorted, want) {
				t.Fatalf("n %d: window %v, want %v", n, w.sorted, want)
			}
		}
	}
}

// oneChain is a chain of n forecasts of one series, made at rows
// 0..n-1 and labelled before the next, predictions 0, targets y.
func oneChain(y []float64) ([]Forecast, Chain) {
	fc := make([]Forecast, len(y))
	var ch Chain
	for i := range y {
		fc[i] = Forecast{Y: y[i], Labelled: true}
		ch.Points = append(ch.Points, i)
		ch.Time = append(ch.Time, float64(i))
		ch.Arrival = append(ch.Arrival, float64(i))
	}
	return fc, ch
}

// TestACIHandWorked runs ACI on fixed calibration scores 1..9 (alpha
// 0.1, gamma 0.05) and checks the working levels and limits against the
// recursion worked by hand:
//
//	t=1: alpha 0.1, q = 9th of 9 = 9, y = 10 misses: alpha = 0.1 + 0.05(0.1 - 1) = 0.055
//	t=2: q: ceil(0.945 × 10) = 10 > 9: unbounded, y = 100 covered: alpha = 0.06
//	t=3: ceil(9.4) = 10: unbounded, covered: alpha = 0.065
//	...   unbounded while ceil((1 - alpha) 10) = 10, i.e. alpha < 0.1
//	t=10: alpha = 0.055 + 8 × 0.005 = 0.095: unbounded, covered: alpha = 0.1
//	t=11: alpha = 0.1: q = 9, y = 0.5 covered: alpha = 0.105
//	t=12: alpha = 0.105: ceil(8.95) = 9: q = 9.
func TestACIHandWorked(t *testing.T) {
	t.Parallel()
	y := []float64{10, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0.5, 0.5}
	pts, ch := oneChain(y)
	cal := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	o, err := Options{Gamma: 0.05, Grid: []float64{0.05}}.WithDefaults(0.1)
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]Step, len(pts))
	Run(o, 0.1, pts, ch, Base{Scores: func(int) []float64 { return cal }}, steps)
	wantAlpha := []float64{0.1, 0.055, 0.06, 0.065, 0.07, 0.075, 0.08, 0.085, 0.09, 0.095, 0.1, 0.105}
	wantUp := []float64{9, math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1), 9, 9}
	for i, st := range steps {
		if math.Abs(st.Alpha-wantAlpha[i]) > 1e-12 || st.ACIUpper != wantUp[i] || st.ACILower != -wantUp[i] {
			t.Errorf("t=%d: alpha %g, limits [%g, %g]; want alpha %g, limits ±%g", i+1, st.Alpha, st.ACILower, st.ACIUpper, wantAlpha[i], wantUp[i])
		}
	}
	// AgACI with one expert is that expert, where its limits are
	// finite; unbounded ones enter at the widest finite member (9). The
	// expert's own recursion counts its unbounded intervals as covering
	// (t=2..10 above, targets 100 beyond the member at 9), so after 21
	// more covered targets its level is 0.205 and its limit 8 (rank
	// ceil(7.95)), as ACI's.
	y = append(y, slices.Repeat([]float64{0.5}, 20)...)
	pts, ch = oneChain(y)
	steps = make([]Step, len(pts))
	Run(o, 0.1, pts, ch, Base{Scores: func(int) []float64 { return cal }}, steps)
	if last := steps[len(steps)-1]; math.Abs(last.Alpha-0.205) > 1e-12 || last.ACIUpper != 8 || math.Abs(last.AgACIUpper-8) > 1e-12 {
		t.Errorf("t=32: alpha %g, ACI limit %g, AgACI limit %g; want 0.205, 8, 8", last.Alpha, last.ACIUpper, last.AgACIUpper)
	}
	for i, st := range steps {
		up := math.Min(st.ACIUpper, 9)
		if math.Abs(st.AgACIUpper-up) > 1e-12 || math.Abs(st.AgACILower+up) > 1e-12 {
			t.Errorf("t=%d: AgACI [%g, %g], want ±%g", i+1, st.AgACILower, st.AgACIUpper, up)
		}
	}
}

// TestACILongRunBound checks ACI's guarantee (Gibbs and Candès 2021,
// Proposition 4.1), |mean err - alpha| <= (max(alpha, 1-alpha) + gamma)
// / (gamma T) at every T, on data chosen against it: an adversary that
// knows the interval puts the target just outside whenever the interval
// is bounded (simulated here from the paper's recursion), then long
// bursts of targets that are always inside or always outside.
func TestACILongRunBound(t *testing.T) {
	t.Parallel()
	const alpha = 0.1
	rng := rand.New(rand.NewPCG(7, 8))
	cal := make([]float64, 19)
	for i := range cal {
		cal[i] = float64(i + 1)
	}
	for _, gamma := range []float64{0.005, 0.05, 0.2} {
		// The adversary's targets, from the recursion alone.
		const T = 4000
		y := make([]float64, T)
		a := alpha
		for i := range y {
			q := quantileAt(a, cal)
			var miss bool
			switch {
			case i >= T/2 && i < 3*T/4:
				y[i], miss = 1e9, !math.IsInf(q, 1) // burst of outliers
			case i >= 3*T/4:
				y[i], miss = 0, math.IsInf(q, -1) // always inside
			case math.IsInf(q, 1):
				y[i] = 5 * rng.Float64() // the whole line covers anything
			default:
				y[i], miss = q+1, true
			}
			if miss {
				a += gamma * (alpha - 1)
			} else {
				a += gamma * alpha
			}
		}
		pts, ch := oneChain(y)
		o, _ := Options{Gamma: gamma}.WithDefaults(0.1)
		steps := make([]Step, T)
		Run(o, alpha, pts, ch, Base{Scores: func(int) []float64 { return cal }}, steps)
		errs := 0
		for i, st := range steps {
			if st.Empty || !(st.ACILower <= y[i] && y[i] <= st.ACIUpper) {
				errs++
			}
			n := float64(i + 1)
			bound := (math.Max(alpha, 1-alpha) + gamma) / (gamma * n)
			if d := math.Abs(float64(errs)/n - alpha); d > bound+1e-12 {
				t.Fatalf("gamma %g, T %d: |mean err - alpha| = %g above the bound %g", gamma, i+1, d, bound)
			}
		}
		if gamma >= 0.05 && math.Abs(float64(errs)/T-alpha) > 0.01 {
			t.Errorf("gamma %g: long-run miscoverage %g, want within 0.01 of %g", gamma, float64(errs)/T, alpha)
		}
	}
}

// TestRollingAndNexCPOnline checks the online kinds on a hand-worked
// chain with a window of 3 scores at alpha 0.5: the rolling quantile is
// the ceil(0.5 × 4) = 2nd smallest of the last 3 scores, unbounded
// before 1 score (rank 1 of 1 at m = 1: ceil(0.5 × 2) = 1).
func TestRollingAndNexCPOnline(t *testing.T) {
	t.Parallel()
	y := []float64{4, -1, 3, 2, -7}
	pts, ch := oneChain(y)
	o, _ := Options{Window: 3, Rho: 1}.WithDefaults(0.1)
	steps := make([]Step, len(y))
	Run(o, 0.5, pts, ch, Base{}, steps)
	// Scores |y|: 4, 1, 3, 2, 7. Before t: window {}, {4}, {1,4}, {1,3,4}, {1,2,3}.
	wantRoll := []float64{math.Inf(1), 4, 4, 3, 2}
	// NexCP with rho 1 and the same window is the same quantile.
	for i, st := range steps {
		if st.RollingUpper != wantRoll[i] || st.NexCPUpper != wantRoll[i] {
			t.Errorf("t=%d: rolling %g, NexCP %g, want %g", i+1, st.RollingUpper, st.NexCPUpper, wantRoll[i])
		}
	}
}

// TestDelayedLabels: a forecast for horizon 2 made at row r is labelled
// at row r+2, so it first updates the state at row r+3.
func TestDelayedLabels(t *testing.T) {
	t.Parallel()
	y := []float64{1, 2, 3, 4, 5}
	pts, ch := oneChain(y)
	for i := range ch.Arrival {
		ch.Arrival[i] = float64(i + 2)
	}
	o, _ := Options{Window: 10, Rho: 1}.WithDefaults(0.1)
	steps := make([]Step, len(y))
	Run(o, 0.5, pts, ch, Base{}, steps)
	// Known scores before row t: none, none, none, {1}, {1, 2}.
	want := []float64{math.Inf(1), math.Inf(1), math.Inf(1), 1, 2}
	for i, st := range steps {
		if st.RollingUpper != want[i] {
			t.Errorf("row %d: rolling limit %g, want %g", i, st.RollingUpper, want[i])
		}
	}
}

// TestOptions checks the defaults and the refusals.
func TestOptions(t *testing.T) {
	t.Parallel()
	o, err := Options{}.WithDefaults(0.1)
	if err != nil || math.Abs(o.Gamma-1.0/23) > 1e-15 || o.Rho != DefaultRho || o.RollingWindow != DefaultRollingWindow || o.Base != BaseSplit || len(o.Grid) == 0 {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	// alpha W = 2.5: no step bounds a window of 25; Gibbs and Candès's.
	if o, _ := (Options{RollingWindow: 25}).WithDefaults(0.1); o.Gamma != DefaultGamma {
		t.Errorf("window 25: gamma %g, want %g", o.Gamma, DefaultGamma)
	}
	for _, bad := range []Options{{Gamma: 1}, {Gamma: -0.1}, {Rho: 1.5}, {Window: -1}, {LabelDelay: -2}, {Base: "other"}, {Grid: []float64{0.1, 2}}, {Grid: []float64{-0.01}}, {Grid: []float64{}}} {
		if _, err := bad.WithDefaults(0.1); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestACIWindowBound checks WindowGamma's guarantee: with gamma =
// 1/(alpha W - 2) every W consecutive forecasts miss at most 2 alpha on
// data chosen against it (a long calm stretch of targets at the
// prediction, which drives alpha_t up to 1, then a burst of outliers),
// where Gibbs and Candès's 0.005 lets a window miss far more.
func TestACIWindowBound(t *testing.T) {
	t.Parallel()
	const alpha, w, T = 0.1, 250, 5000
	cal := make([]float64, 19)
	for i := range cal {
		cal[i] = float64(i + 1)
	}
	worst := func(gamma float64) float64 {
		y := make([]float64, T)
		for i := T / 2; i < T; i++ {
			y[i] = 1e9
		}
		pts, ch := oneChain(y)
		o, _ := Options{Gamma: gamma}.WithDefaults(alpha)
		steps := make([]Step, T)
		Run(o, alpha, pts, ch, Base{Scores: func(int) []float64 { return cal }}, steps)
		miss := make([]float64, T)
		for i, st := range steps {
			if st.Empty || !(st.ACILower <= y[i] && y[i] <= st.ACIUpper) {
				miss[i] = 1
			}
		}
		most := 0.0
		for s := 0; s+w <= T; s++ {
			sum := 0.0
			for _, m := range miss[s : s+w] {
				sum += m
			}
			most = math.Max(most, sum/w)
		}
		return most
	}
	g := WindowGamma(alpha, w)
	if math.Abs(g-1.0/23) > 1e-15 {
		t.Fatalf("WindowGamma(0.1, 250) = %g, want 1/23", g)
	}
	if m := worst(g); m > 2*alpha+1e-12 {
		t.Errorf("gamma %g: a window of %d misses %g, above 2 alpha", g, w, m)
	}
	if m := worst(0.005); m <= 2*alpha {
		t.Errorf("gamma 0.005: worst window misses %g, want the adversary to exceed 2 alpha", m)
	}
}

// TestHits: hits takes the labelled forecasts of each chain in time
// order, an empty interval as not covering.
func TestHits(t *testing.T) {
	t.Parallel()
	fc := []Forecast{{Y: 1, Labelled: true}, {Y: 5, Labelled: true}, {Y: 2}, {Y: 0, Labelled: true}}
	chains := []Chain{{Points: []int{1, 0}}, {Points: []int{2, 3}}}
	lo, up := []float64{0, 0, 0, 0}, []float64{3, 3, 3, 3}
	h := hits(fc, chains, lo, up, []bool{false, false, false, true})
	if len(h) != 2 || !slices.Equal(h[0], []float64{0, 1}) || !slices.Equal(h[1], []float64{0}) {
		t.Errorf("hits %v, want [[0 1] [0]]", h)
	}
}

// BenchmarkRun runs the four kinds along one series of 5,000 forecasts
// with the default options (AgACI's 30 experts) on calibration scores.
func BenchmarkRun(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	y := make([]float64, 5000)
	for i := range y {
		y[i] = 10 * rng.NormFloat64()
	}
	cal := make([]float64, 99)
	for i := range cal {
		cal[i] = float64(i+1) / 5
	}
	fc, ch := oneChain(y)
	o, err := Options{}.WithDefaults(0.1)
	if err != nil {
		b.Fatal(err)
	}
	steps := make([]Step, len(fc))
	b.ReportAllocs()
	for b.Loop() {
		Run(o, 0.1, fc, ch, Base{Scores: func(int) []float64 { return cal }}, steps)
	}
}
