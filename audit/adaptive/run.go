package adaptive

import (
	"cmp"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// Forecast is one forecast of a series as the adaptive kinds take it.
type Forecast struct {
	Pred     float64 // the prediction
	Y        float64 // the target, when Labelled
	Labelled bool    // the target is known (when its label arrives)
	// Lower and Upper are the forecast's jackknife+ interval, which the
	// jackknife base scales about the prediction (unused on the split
	// base).
	Lower, Upper float64
}

// Score is the forecast's score on the base family base (BaseSplit or
// BaseJackknife) for its target Y: the smallest q whose member covers Y,
// |Y - Pred| on the split base, interval.CJScore of the jackknife+
// interval on the jackknife base.
func (f Forecast) Score(base string) float64 {
	return family{f, base == BaseJackknife}.score(f.Y)
}

// Chain is one series the adaptive state runs along: the indices of its
// forecasts in time order, the time each is made and the time its label
// arrives (a label updates the state of the forecasts made after it
// arrives, strictly).
type Chain struct {
	Points  []int
	Time    []float64
	Arrival []float64
}

// Base is where ACI and AgACI take their base intervals from, besides
// the base family of Options.Base.
type Base struct {
	// Scores, when not nil, gives forecast i's sorted base scores, at
	// which ACI and AgACI take their quantiles (a calibration set's at
	// the same forecast); nil takes the series' own earlier scores (the
	// last Options.Window, or all).
	Scores func(i int) []float64
	// Sets, when not nil, gives forecast i's leave-one-block-out sets V-
	// and V+, each sorted ascending (NaN mapped to -Inf in V- and +Inf in
	// V+): ACI and AgACI then take the jackknife+ interval recomputed at
	// their working level instead of a member of the base family at the
	// base scores' quantile, and need no scores.
	Sets func(i int) (vm, vp []float64)
}

// family is a forecast's base family of intervals: Pred ± q (split), or
// the jackknife+ interval [Lower, Upper] scaled by q about Pred
// (jackknife: the conformalized jackknife+ family).
type family struct {
	Forecast
	jk bool
}

// at is the member of level q: the empty set (both limits at the
// prediction) at -Inf, the whole line at +Inf.
func (fm family) at(q float64) (lo, up float64, empty bool) {
	switch {
	case math.IsInf(q, -1):
		return fm.Pred, fm.Pred, true
	case fm.jk:
		lo, up = interval.CJLimits(fm.Pred, fm.Lower, fm.Upper, q)
		return lo, up, false
	}
	return fm.Pred - q, fm.Pred + q, false
}

// score is the smallest q whose member covers y.
func (fm family) score(y float64) float64 {
	if fm.jk {
		return interval.CJScore(fm.Pred, fm.Lower, fm.Upper, y)
	}
	return math.Abs(y - fm.Pred)
}

// Step are the adaptive limits of one forecast; limits may be ±Inf; an
// empty ACI interval has both limits at the prediction and Empty set.
type Step struct {
	Alpha        float64 // ACI's working level alpha_t
	Empty        bool
	ACILower     float64
	ACIUpper     float64
	AgACILower   float64
	AgACIUpper   float64
	NexCPLower   float64
	NexCPUpper   float64
	RollingLower float64
	RollingUpper float64
	// ACI clipped: its own working level and interval (an unbounded
	// limit replaced by the member at Options.Clip times the largest
	// score seen; ClippedEmpty at a level >= 1).
	ClippedAlpha float64
	ClippedEmpty bool
	ClippedLower float64
	ClippedUpper float64
	// Quantile tracking's quantile and interval (empty when the quantile
	// is below 0).
	Tracked       float64
	TrackingEmpty bool
	TrackingLower float64
	TrackingUpper float64
	// Conformal PID's quantile (scorecast + tracked + integrator) and
	// interval (empty when the quantile is below 0).
	PID      float64
	PIDEmpty bool
	PIDLower float64
	PIDUpper float64
}

// Run runs the adaptive kinds at miscoverage alpha along the chain
// ch of the forecasts fc, writing the limits of its forecasts into
// steps (steps[i] for forecast i; the others are left alone). o are the
// options with their defaults (Options.WithDefaults); the base family is
// o.Base's, and b says where ACI and AgACI take its members. Each
// forecast's limits are made from the labels that arrived before it is
// made (Chain.Arrival < Chain.Time), taken in the order they arrived. It
// returns the chain's figures that the finite kinds' long-run bounds
// need.
func Run(o Options, alpha float64, fc []Forecast, ch Chain, b Base, steps []Step) Tally {
	K := len(o.Grid)
	jk := o.Base == BaseJackknife
	win := sortedWindow{n: o.Window}
	var hist []float64 // every score, oldest first (NexCP)
	alphaT := alpha
	expert := make([]float64, K)
	for k := range expert {
		expert[k] = alpha
	}
	boaLo, boaUp := newBOA(K), newBOA(K)
	// The finite kinds: ACI clipped's level, quantile tracking's
	// quantile, conformal PID's tracked part and error sum, started at
	// the chain's first forecast; n counts the labels taken.
	var (
		n                     int
		alphaC                = alpha
		qt, pidP, pidSum      float64
		started, scorecasting bool
		lastCast              float64
		seen                  float64 // largest finite score taken
		bMax                  float64 // largest score taken (and first quantile), for the bound
		aciSteps, qtSteps     stepLog
		tally                 Tally
	)
	type pending struct {
		i            int
		arrival      float64
		aciLo, aciUp float64
		aciEmpty     bool
		exLo, exUp   []float64 // the experts' limits as aggregated
		exEmpty      []bool
		exOwn        [][2]float64 // the experts' own limits (ACI's recursion scores these)
		aggLo, aggUp float64
		finite       bool
		clipMiss     func(y float64) bool
		clipNonPos   bool // ACI clipped's level was <= 0
		qtMiss       func(y float64) bool
		pidMiss      func(y float64) bool
	}
	var queue []pending
	var nbuf []wscore
	// scale is the step scale at forecast i: the largest finite score of
	// the last RollingWindow taken and of its base scores, else the
	// family's unit.
	scale := func(i int) float64 {
		past := hist
		if len(past) > o.RollingWindow {
			past = past[len(past)-o.RollingWindow:]
		}
		m := maxFinite(0, past)
		if b.Scores != nil {
			m = maxFinite(m, b.Scores(i))
		}
		if m > 0 {
			return m
		}
		return family{fc[i], jk}.unit()
	}
	// limit is the finite quantile that replaces an unbounded one at
	// forecast i: Clip times the largest finite score seen (taken, or
	// among its base scores), else times the family's unit.
	limit := func(i int, base []float64) float64 {
		m := maxFinite(seen, base)
		if m > 0 {
			return o.Clip * m
		}
		return o.Clip * family{fc[i], jk}.unit()
	}
	apply := func(q pending) {
		y := fc[q.i].Y
		fm := family{fc[q.i], jk}
		s := fm.score(y)
		n++
		alphaT = aciUpdate(alpha, alphaT, decayed(o.Gamma, n, o.Decay), q.aciEmpty || !(q.aciLo <= y && y <= q.aciUp))
		for k := range expert {
			// ACI's recursion scores the expert's own interval: an
			// unbounded one covers, whatever limit the aggregation
			// used for it.
			miss := q.exEmpty[k] || !(q.exOwn[k][0] <= y && y <= q.exOwn[k][1])
			expert[k] = aciUpdate(alpha, expert[k], decayed(o.Grid[k], n, o.Decay), miss)
		}
		if q.finite {
			boaLo.update(q.exLo, q.aggLo, pinballGrad(alpha/2, q.aggLo, y))
			boaUp.update(q.exUp, q.aggUp, pinballGrad(1-alpha/2, q.aggUp, y))
		}
		g := decayed(o.Gamma, n, o.Decay)
		miss := q.clipMiss(y)
		alphaC = aciUpdate(alpha, alphaC, g, miss)
		aciSteps.add(g)
		if miss && q.clipNonPos {
			tally.Capped++
		}
		eta := decayed(o.Step*scale(q.i), n, o.Decay)
		qt = qtUpdate(alpha, qt, eta, q.qtMiss(y))
		qtSteps.add(eta)
		miss = q.pidMiss(y)
		pidP = qtUpdate(alpha, pidP, eta, miss)
		pidSum += b2f(miss) - alpha
		bMax = math.Max(bMax, s)
		if !math.IsInf(s, 0) {
			seen = math.Max(seen, s)
		}
		win.add(s)
		hist = append(hist, s)
	}
	for j, i := range ch.Points {
		// Labels that arrived before this forecast is made, in order.
		ready := queue[:0:0]
		rest := queue[:0:0]
		for _, q := range queue {
			if q.arrival < ch.Time[j] {
				ready = append(ready, q)
			} else {
				rest = append(rest, q)
			}
		}
		slices.SortStableFunc(ready, func(a, b pending) int { return cmp.Compare(a.arrival, b.arrival) })
		for _, q := range ready {
			apply(q)
		}
		queue = rest
		tally.Pending = max(tally.Pending, len(queue))

		f := fc[i]
		fm := family{f, jk}
		base := win.sorted
		if b.Scores != nil {
			base = b.Scores(i)
		}
		// member is the base family's interval at working level a, and
		// wlo, wup its widest finite member, where AgACI aggregates an
		// expert's unbounded limit.
		member := func(a float64) (lo, up float64, empty bool) { return fm.at(quantileAt(a, base)) }
		var wlo, wup float64
		if b.Sets != nil {
			vm, vp := b.Sets(i)
			member = func(a float64) (lo, up float64, empty bool) { return jackknifeLevel(f.Pred, a, vm, vp) }
			wlo, wup = jackknifeWidest(vm, vp)
		} else {
			widest := math.Inf(1)
			for k := len(base) - 1; k >= 0; k-- {
				if !math.IsInf(base[k], 1) {
					widest = base[k]
					break
				}
			}
			wlo, wup, _ = fm.at(widest)
		}
		st := &steps[i]
		st.Alpha = alphaT
		st.ACILower, st.ACIUpper, st.Empty = member(alphaT)
		// AgACI: each expert's limits, unbounded ones at the widest
		// finite member.
		q := pending{i: i, arrival: ch.Arrival[j], aciLo: st.ACILower, aciUp: st.ACIUpper, aciEmpty: st.Empty,
			exLo: make([]float64, K), exUp: make([]float64, K), exEmpty: make([]bool, K), exOwn: make([][2]float64, K), finite: true}
		for k := range expert {
			lo, up, empty := member(expert[k])
			q.exEmpty[k] = empty
			q.exOwn[k] = [2]float64{lo, up}
			if math.IsInf(lo, -1) {
				lo = wlo
			}
			if math.IsInf(up, 1) {
				up = wup
			}
			if math.IsInf(lo, 0) || math.IsInf(up, 0) {
				q.finite = false
			}
			q.exLo[k], q.exUp[k] = lo, up
		}
		if q.finite {
			q.aggLo, q.aggUp = boaLo.predict(q.exLo), boaUp.predict(q.exUp)
		} else {
			q.aggLo, q.aggUp = math.Inf(-1), math.Inf(1)
		}
		st.AgACILower, st.AgACIUpper = q.aggLo, q.aggUp
		past := hist
		if o.Window > 0 && len(past) > o.Window {
			past = past[len(past)-o.Window:]
		}
		var qn float64
		qn, nbuf = nexcpQuantile(alpha, o.Rho, past, nbuf)
		st.NexCPLower, st.NexCPUpper, _ = fm.at(qn)
		st.RollingLower, st.RollingUpper, _ = fm.at(quantileAt(alpha, win.sorted))

		// The finite kinds.
		lim := limit(i, base)
		if !started {
			started = true
			q0 := quantileAt(alpha, base)
			if math.IsInf(q0, 0) || math.IsNaN(q0) {
				q0 = lim / o.Clip
			}
			qt, pidP, bMax = q0, q0, q0
			if h, ok := fm.halfWidth(); ok && !o.NoScorecast {
				scorecasting, pidP, lastCast = true, 0, h
			}
		}
		st.ClippedAlpha = alphaC
		q.clipNonPos = !(alphaC > 0)
		lo, up, empty := member(alphaC)
		if math.IsInf(lo, 0) || math.IsInf(up, 0) {
			clo, cup, _ := fm.at(lim)
			if b.Sets != nil {
				clo, cup = f.Pred-o.Clip*math.Abs(f.Pred-wlo), f.Pred+o.Clip*math.Abs(wup-f.Pred)
				if math.IsInf(clo, 0) || math.IsInf(cup, 0) || math.IsNaN(clo) || math.IsNaN(cup) {
					clo, cup, _ = fm.at(lim)
				}
			}
			if math.IsInf(lo, -1) {
				lo = clo
			}
			if math.IsInf(up, 1) {
				up = cup
			}
		}
		st.ClippedLower, st.ClippedUpper, st.ClippedEmpty = lo, up, empty
		q.clipMiss = intervalMiss(lo, up, empty)
		st.Tracked = qt
		st.TrackingLower, st.TrackingUpper, st.TrackingEmpty = fm.finiteAt(qt)
		q.qtMiss = intervalMiss(st.TrackingLower, st.TrackingUpper, st.TrackingEmpty)
		cast := 0.0
		if scorecasting {
			if h, ok := fm.halfWidth(); ok {
				lastCast = h
			}
			cast = lastCast
		}
		st.PID = cast + pidP + saturation(pidSum, n, o.Integrator, o.Saturation, scale(i), lim)
		st.PIDLower, st.PIDUpper, st.PIDEmpty = fm.finiteAt(st.PID)
		q.pidMiss = intervalMiss(st.PIDLower, st.PIDUpper, st.PIDEmpty)
		if f.Labelled {
			queue = append(queue, q)
			tally.Labelled++
		}
	}
	tally.Unapplied = len(queue)
	tally.finish(&aciSteps, &qtSteps, bMax)
	return tally
}

// intervalMiss says whether a target falls outside the interval [lo,
// up] (every target does when it is empty).
func intervalMiss(lo, up float64, empty bool) func(y float64) bool {
	return func(y float64) bool { return empty || !(lo <= y && y <= up) }
}

// b2f is 1 for true and 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
