package adaptive

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// TestFiniteKindsReference checks ACI clipped, quantile tracking and
// conformal PID, forecast by forecast, against an independent Python
// re-implementation of their stated rules (testdata/finite_reference.py
// wrote testdata/finite_reference.json): a series of 200 forecasts with
// volatility spells, on calibration scores and on the series' own past,
// with and without scorecaster, integrator and decaying steps, and with
// labels three forecasts late (the state of horizon 3).
func TestFiniteKindsReference(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/finite_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name                                      string
		Pred, Y, Lower, Upper, Cal                []float64
		Alpha, Gamma, Step, KI, Csat, Clip, Decay float64
		W, Delay                                  int
		Scorecast                                 bool
		Want                                      map[string][][4]any
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != 5 {
		t.Fatalf("%d cases, want 5", len(cases))
	}
	for _, c := range cases {
		n := len(c.Pred)
		fc := make([]Forecast, n)
		var ch Chain
		for i := range fc {
			fc[i] = Forecast{Pred: c.Pred[i], Y: c.Y[i], Labelled: true, Lower: c.Lower[i], Upper: c.Upper[i]}
			ch.Points = append(ch.Points, i)
			ch.Time = append(ch.Time, float64(i))
			ch.Arrival = append(ch.Arrival, float64(i+c.Delay))
		}
		o, err := Options{Gamma: c.Gamma, Step: c.Step, Integrator: c.KI, Saturation: c.Csat, Clip: c.Clip, Decay: c.Decay,
			RollingWindow: c.W, NoScorecast: !c.Scorecast}.WithDefaults(c.Alpha)
		if err != nil {
			t.Fatal(err)
		}
		var b Base
		if c.Cal != nil {
			cal := slices.Sorted(slices.Values(c.Cal))
			b.Scores = func(int) []float64 { return cal }
		}
		steps := make([]Step, n)
		tally := Run(o, c.Alpha, fc, ch, b, steps)
		if tally.Labelled != n || tally.Pending != c.Delay || tally.Unapplied != 1+c.Delay { // the last labels arrive after the last forecast
			t.Errorf("%s: tally %+v", c.Name, tally)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		for i, st := range steps {
			for _, k := range []struct {
				key           string
				state, lo, up float64
				empty         bool
			}{
				{"clipped", st.ClippedAlpha, st.ClippedLower, st.ClippedUpper, st.ClippedEmpty},
				{"qt", st.Tracked, st.TrackingLower, st.TrackingUpper, st.TrackingEmpty},
				{"pid", st.PID, st.PIDLower, st.PIDUpper, st.PIDEmpty},
			} {
				w := c.Want[k.key][i]
				if !near(k.state, w[0].(float64)) || !near(k.lo, w[1].(float64)) || !near(k.up, w[2].(float64)) || k.empty != w[3].(bool) {
					t.Fatalf("%s: forecast %d: %s (%g, [%g, %g], empty %v), Python (%v, [%v, %v], empty %v)", c.Name, i, k.key, k.state, k.lo, k.up, k.empty, w[0], w[1], w[2], w[3])
				}
				if math.IsInf(k.lo, 0) || math.IsInf(k.up, 0) {
					t.Fatalf("%s: forecast %d: %s is unbounded", c.Name, i, k.key)
				}
			}
		}
	}
}

// TestFiniteHandWorked checks quantile tracking and ACI clipped on
// calibration scores 1..9 (alpha 0.1, predictions 0) against the
// recursions worked by hand. Quantile tracking, step 0.1 times the
// largest score (the calibration set's 9, then the target 10's):
//
//	t=1: q = 9 (the 9th of 9), y = 10 misses: q = 9 + 0.9 × 0.9 = 9.81
//	t=2: y = 0.5 covered: q = 9.81 - 1 × 0.1 = 9.71
//	t=3: y = 9.8 misses: q = 9.71 + 1 × 0.9 = 10.61
//
// ACI clipped, gamma 0.05, clip 1.5:
//
//	t=1: alpha 0.1, q = 9, y = 10 misses: alpha = 0.055
//	t=2: rank ceil(0.945 × 10) = 10 > 9, unbounded for ACI: 1.5 × 10 = 15;
//	     y = 100 misses: alpha = 0.01
//	t=3: unbounded for ACI: 1.5 × 100 = 150, y = 100 covered: alpha = 0.015
//	t=4: rank 10 > 9: 150.
func TestFiniteHandWorked(t *testing.T) {
	t.Parallel()
	cal := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	o, err := Options{Gamma: 0.05, Step: 0.1, Clip: 1.5, Integrator: -1}.WithDefaults(0.1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		y       []float64
		tracked []float64
		clipped []float64
	}{
		{[]float64{10, 0.5, 9.8, -3}, []float64{9, 9.81, 9.71, 10.61}, nil},
		{[]float64{10, 100, 100, 0.5}, nil, []float64{9, 15, 150, 150}},
	} {
		fc, ch := oneChain(c.y)
		steps := make([]Step, len(c.y))
		Run(o, 0.1, fc, ch, Base{Scores: func(int) []float64 { return cal }}, steps)
		for i, st := range steps {
			if c.tracked != nil && (math.Abs(st.Tracked-c.tracked[i]) > 1e-12 || st.TrackingUpper != st.Tracked || st.TrackingLower != -st.Tracked) {
				t.Errorf("t=%d: quantile tracking %g [%g, %g], want %g", i+1, st.Tracked, st.TrackingLower, st.TrackingUpper, c.tracked[i])
			}
			if c.clipped != nil && (st.ClippedUpper != c.clipped[i] || st.ClippedLower != -c.clipped[i]) {
				t.Errorf("t=%d: ACI clipped [%g, %g], want ±%g", i+1, st.ClippedLower, st.ClippedUpper, c.clipped[i])
			}
		}
		if c.clipped != nil && (math.Abs(steps[3].ClippedAlpha-0.015) > 1e-15 || !math.IsInf(steps[1].ACIUpper, 1)) {
			t.Errorf("ACI clipped's level at t=4 %g, want 0.015; ACI's own limit at t=2 %g, want +Inf", steps[3].ClippedAlpha, steps[1].ACIUpper)
		}
	}
}

// TestSaturation checks the integrator on hand-worked values: tan(x)
// times K_I and the scale, ±limit beyond ±pi/2, 0 before any label and
// with the integrator off.
func TestSaturation(t *testing.T) {
	t.Parallel()
	// sum 1 after n = 1 label, C_sat 1: x = log 2 / 2 = 0.34657...
	if got, want := saturation(1, 1, 2, 1, 3, 100), 6*math.Tan(math.Log(2)/2); math.Abs(got-want) > 1e-15 {
		t.Errorf("saturation = %g, want %g", got, want)
	}
	for _, c := range []struct {
		sum  float64
		n    int
		ki   float64
		want float64
	}{
		{1000, 10, 1, 7}, {-1000, 10, 1, -7}, {0.99 * math.Pi / 2 * 11 / math.Log(11), 10, 1, 7}, {5, 0, 1, 0}, {5, 10, -1, 0},
	} {
		if got := saturation(c.sum, c.n, c.ki, 1, 1, 7); got != c.want && !(c.want == 7 && got == 7) {
			t.Errorf("saturation(%g, %d, K_I %g) = %g, want %g", c.sum, c.n, c.ki, got, c.want)
		}
	}
}

// TestFiniteBounds checks the long-run bounds that Run's tally gives
// for ACI clipped and quantile tracking on data chosen against them:
// heavy-tailed targets with bursts of outliers, labels three forecasts
// late (four still unlabelled at the end) and decaying steps; the sum of err - alpha over the labelled
// forecasts must stay within the bound, and no interval is unbounded.
func TestFiniteBounds(t *testing.T) {
	t.Parallel()
	for _, decay := range []float64{0, 0.5} {
		n := 3000
		y := make([]float64, n)
		for i := range y {
			y[i] = math.Tan(math.Pi * (math.Mod(float64(i)*0.6180339887, 1) - 0.5)) // Cauchy-like
			if i%500 < 40 {
				y[i] *= 50 // a burst
			}
		}
		fc, ch := oneChain(y)
		for i := range ch.Arrival {
			ch.Arrival[i] = float64(i + 3)
		}
		o, _ := Options{Decay: decay, Window: 100}.WithDefaults(0.1)
		steps := make([]Step, n)
		tally := Run(o, 0.1, fc, ch, Base{}, steps)
		if tally.Pending != 3 || tally.Unapplied != 4 {
			t.Errorf("decay %g: pending %d, unapplied %d, want 3 and 4", decay, tally.Pending, tally.Unapplied)
		}
		var clip, qt float64
		for i, st := range steps {
			if math.IsInf(st.ClippedLower, 0) || math.IsInf(st.ClippedUpper, 0) || math.IsInf(st.TrackingUpper, 0) || math.IsInf(st.PIDUpper, 0) {
				t.Fatalf("decay %g: forecast %d unbounded", decay, i)
			}
			clip += b2f(st.ClippedEmpty || !(st.ClippedLower <= y[i] && y[i] <= st.ClippedUpper)) - 0.1
			qt += b2f(st.TrackingEmpty || !(st.TrackingLower <= y[i] && y[i] <= st.TrackingUpper)) - 0.1
		}
		if math.Abs(clip) > tally.ClippedSum || math.Abs(qt) > tally.TrackingSum {
			t.Errorf("decay %g: |sum err - alpha| %g (ACI clipped), %g (tracking); bounds %g, %g", decay, clip, qt, tally.ClippedSum, tally.TrackingSum)
		}
	}
}

// TestWidths checks the widths that count every interval on a
// hand-worked case: five labelled forecasts at prediction 0, widths 2,
// 4, 0 (empty), unbounded and 6 (one unlabelled forecast ignored), alpha
// 0.5, penalty 10. Sorted widths 0, 2, 4, 6, +Inf: median (3rd) 4, 90th
// percentile (5th) +Inf; interval scores 2, 4 + 2/0.5 × 1 (y = 3 above
// 2) = 8, 0 + 4 × 1 (y = 1, empty) = 4, the penalty 10, 6: mean 30/5 =
// 6.
func TestWidths(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	fc := []Forecast{{Y: 0, Labelled: true}, {Y: 3, Labelled: true}, {Y: 1, Labelled: true}, {Y: 0, Labelled: true}, {Y: -2, Labelled: true}, {Y: 100}}
	lo := []float64{-1, -2, 0, -inf, -3, -50}
	up := []float64{1, 2, 0, 1, 3, 50}
	empty := []bool{false, false, true, false, false, false}
	u, med, p90, w := Widths(fc, lo, up, empty, 0.5, 10)
	if u != 0.2 || med != 4 || !math.IsInf(p90, 1) || w != 6 {
		t.Errorf("Widths = %g, %g, %g, %g; want 0.2, 4, +Inf, 6", u, med, p90, w)
	}
	if p := WidthPenalty(fc); p != 10 {
		t.Errorf("WidthPenalty = %g, want 2 × (3 - (-2)) = 10", p)
	}
	// A miss on the finite side of an unbounded interval still counts:
	// y = 5 above 1 adds 2/0.5 × 4 = 16 to its 10, so the mean is 46/5.
	fc[3].Y = 5
	if _, _, _, w := Widths(fc, lo, up, empty, 0.5, 10); math.Abs(w-9.2) > 1e-15 {
		t.Errorf("interval score with a miss beside an unbounded limit %g, want 9.2", w)
	}
}

// TestRecommend checks that the recommendation is never a kind with an
// unbounded interval, however narrow its median, and falls back to the
// finite kind of highest coverage when none holds.
func TestRecommend(t *testing.T) {
	t.Parallel()
	k := func(kind string, cov, worst, med float64, inf int) Kind {
		var x Kind
		x.Kind, x.Coverage, x.WorstWindow, x.MedianWidth, x.Infinite = kind, cov, worst, med, inf
		return x
	}
	kinds := []Kind{k(KindACI, 0.9, 0.85, 1, 3), k(KindAgACI, 0.88, 0.85, 1.1, 0), k(KindQuantileTracking, 0.9, 0.79, 1.2, 0),
		k(KindACIClipped, 0.9, 0.85, 1.3, 0), k(KindPID, 0.91, 0.86, 1.25, 0), k("split_conformal", 0.95, 0.9, 0.5, 0)}
	if got, holds := Recommend(kinds, 0.1); got != KindPID || !holds {
		t.Errorf("Recommend = %s (holds %v), want %s: ACI is unbounded, AgACI under-covers, tracking's worst window is low, split is not adaptive", got, holds, KindPID)
	}
	if got, holds := Recommend(kinds[:3], 0.1); got != KindQuantileTracking || holds {
		t.Errorf("Recommend without a holding kind = %s (holds %v), want %s, the finite kind of highest coverage", got, holds, KindQuantileTracking)
	}
}
