package audit

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// Intervals that adapt along time (DESIGN section 9). When the test data
// continue a series in time (rows ordered by t within each sequence, the
// labels arriving as they go), the forecasts of a series are taken in
// time order and each forecast's interval is made from what was known
// before it: the labels of earlier forecasts (a forecast for horizon h
// made at row r is labelled at row r+h, so it updates the state of
// forecasts made after row r+h). Four kinds run along each series:
//
//   - ACI (Gibbs and Candès 2021): the base interval at the working
//     level 1 - alpha_t, with alpha_{t+1} = alpha_t + gamma (alpha - err_t)
//     (aciUpdate); alpha_t <= 0 gives the whole line, alpha_t >= 1 the
//     empty set. For every series of T forecasts and any data,
//     |mean err - alpha| <= (max(alpha_1, 1 - alpha_1) + gamma) / (gamma T)
//     (their Proposition 4.1; alpha_1 = alpha here), and every W
//     consecutive forecasts miss at most 2 alpha when gamma >=
//     1/(alpha W - 2) (WindowGamma, the default step).
//   - AgACI (Zaffran et al. 2022): ACI for each gamma of a grid, their
//     lower and upper limits aggregated separately by Bernstein online
//     aggregation (boa) under the pinball loss at levels alpha/2 and
//     1 - alpha/2. An expert's unbounded limit enters the aggregation at
//     the widest finite member of the base family (the largest base
//     score), as Zaffran et al. threshold infinite limits; when no base
//     score is finite the aggregate is unbounded. No finite-sample
//     guarantee: each expert has ACI's, the aggregation a regret bound.
//   - NexCP (Barber et al. 2023): the base family at the weighted
//     quantile of the series' past scores with weights rho^age
//     (nexcpQuantile). Coverage is at least 1 - alpha minus the weighted
//     total variation between the distributions of the past and the new
//     scores (their Theorem 2): exact for exchangeable scores, small when
//     the distribution drifts slowly.
//   - Rolling (split conformal on the series' own recent past: Darts'
//     conformal models, and EnbPI without its ensemble): the base family
//     at the conformal quantile of the last Window scores. 1 - alpha when
//     those scores and the next one are exchangeable; nothing under drift.
//
// The base family is split conformal's, prediction ± q with the score
// |y - f|, or on the jackknife base the jackknife+ interval. Split's
// scores come from the calibration set at the same forecast (row,
// horizon) when one is given and Window is 0, else from the series' own
// earlier labelled forecasts (the last Window of them, or all when
// Window is 0): calibration from the series' most recent labelled
// stretch. ACI and AgACI take the member at their working level: on the
// split base the base scores' quantile at that level, on the jackknife
// base the jackknife+ interval recomputed at that level from the point's
// leave-one-block-out sets (adaptive_jackknife.go), which needs no
// scores. NexCP and Rolling take quantiles of the series' own past
// scores; on the jackknife base they scale the jackknife+ interval about
// the prediction, cjLimits with the score cjScore (the conformalized
// jackknife+ family, so the intervals keep the jackknife+ shape).

// AdaptiveOptions configure the intervals that adapt along time
// (Options.Adaptive; nil: none). The zero value runs the defaults.
type AdaptiveOptions struct {
	// Gamma is ACI's step size; 0 means WindowGamma(alpha,
	// RollingWindow), the smallest step that bounds every window's
	// miscoverage by 2 alpha, or DefaultGamma when no step does (alpha
	// RollingWindow <= 3).
	Gamma float64
	// Grid are AgACI's step sizes; nil means DefaultAgACIGrid.
	Grid []float64
	// Rho is NexCP's weight decay per forecast, in (0, 1]; 0 means
	// DefaultRho.
	Rho float64
	// Window takes the base scores from the last Window labelled
	// forecasts of the series (Darts' calibration window): the flag
	// --calibration-from last:N. 0 takes them from the calibration set
	// when there is one and from every earlier labelled forecast of the
	// series otherwise (and Rolling then uses every earlier forecast).
	Window int
	// Base is BaseSplit ("" too) or BaseJackknife.
	Base string
	// Pooled runs one state over all test sequences, in the order of
	// their step values (t): for test sequences that are consecutive
	// windows of one series, or several series observed at the same
	// times. Otherwise each sequence runs its own state.
	Pooled bool
	// RollingWindow is W of the worst rolling-window coverage (the
	// lowest coverage of W consecutive labelled forecasts of a series);
	// 0 means DefaultRollingWindow.
	RollingWindow int
	// LabelDelay is how many rows after its target's row a label becomes
	// known (0: at that row). A target computed from later rows, such as
	// next week's volatility at a daily row, is known only when they
	// are: LabelDelay 5 there. The state takes a label only once it is
	// known, so no forecast is made with a label from its future.
	LabelDelay int
}

// Defaults of AdaptiveOptions.
const (
	// DefaultGamma is ACI's step when the rolling window is too short
	// for WindowGamma: Gibbs and Candès's 0.005.
	DefaultGamma         = 0.005
	DefaultRho           = 0.99 // Barber et al.'s choice for drifting data
	DefaultRollingWindow = 250
)

// WindowGamma is the smallest ACI step gamma that bounds the miscoverage
// of every w consecutive forecasts of a series by 2 alpha, on any data
// (each label known before the next forecast): with alpha_1 = alpha the
// working level stays in [-gamma, 1 + gamma] (Gibbs and Candès 2021,
// Lemma 4.1), and over forecasts s..s+w-1 the recursion sums to
// w alpha - sum err = (alpha_{s+w} - alpha_s)/gamma, so the window's
// miscoverage is within (1 + 2 gamma)/(gamma w) of alpha: at most alpha
// away when gamma >= 1/(alpha w - 2). It is 0 when alpha w <= 3 (no
// step below 1 does). A larger step adapts faster and has more
// unbounded intervals (alpha_t <= 0).
func WindowGamma(alpha float64, w int) float64 {
	d := alpha*float64(w) - 2
	if !(d > 1) {
		return 0
	}
	return 1 / d
}

// DefaultAgACIGrid are AgACI's default step sizes, Zaffran et al.'s
// grid of 30 (their code, AgACI/Script/acp_gamma.R): 0 (split conformal
// on the base scores, never adapting), 5e-6, 5e-5, then 0.0001 to 0.0009,
// 0.001 to 0.009 and 0.01 to 0.09 in steps of their first value.
var DefaultAgACIGrid = []float64{0, 0.000005, 0.00005,
	0.0001, 0.0002, 0.0003, 0.0004, 0.0005, 0.0006, 0.0007, 0.0008, 0.0009,
	0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009,
	0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09}

// Base families of the adaptive intervals.
const (
	BaseSplit     = "split"     // prediction ± q, score |y - f|
	BaseJackknife = "jackknife" // jackknife+ interval scaled by q about the prediction, score cjScore
)

// Kinds of adaptive interval (Adaptive.Kinds); the others are compared
// under their own Kind names.
const (
	KindACI     = "aci"
	KindAgACI   = "agaci"
	KindNexCP   = "nexcp"
	KindRolling = "rolling_conformal"
)

// withDefaults checks the options and fills the defaults for the
// miscoverage alpha.
func (o AdaptiveOptions) withDefaults(alpha float64) (AdaptiveOptions, error) {
	if o.Grid == nil {
		o.Grid = DefaultAgACIGrid
	}
	if o.Rho == 0 {
		o.Rho = DefaultRho
	}
	if o.RollingWindow == 0 {
		o.RollingWindow = DefaultRollingWindow
	}
	if o.Gamma == 0 && o.RollingWindow > 0 {
		if o.Gamma = WindowGamma(alpha, o.RollingWindow); o.Gamma == 0 {
			o.Gamma = DefaultGamma
		}
	}
	if o.Base == "" {
		o.Base = BaseSplit
	}
	switch {
	case !(o.Gamma > 0 && o.Gamma < 1):
		return o, fmt.Errorf("audit: ACI step size gamma %g must be in (0, 1)", o.Gamma)
	case len(o.Grid) == 0:
		return o, fmt.Errorf("audit: AgACI needs at least one step size")
	case !(o.Rho > 0 && o.Rho <= 1):
		return o, fmt.Errorf("audit: NexCP decay rho %g must be in (0, 1]", o.Rho)
	case o.Window < 0:
		return o, fmt.Errorf("audit: calibration window %d must not be negative", o.Window)
	case o.LabelDelay < 0:
		return o, fmt.Errorf("audit: label delay %d must not be negative", o.LabelDelay)
	case o.RollingWindow < 1:
		return o, fmt.Errorf("audit: rolling window %d must be at least 1", o.RollingWindow)
	case o.Base != BaseSplit && o.Base != BaseJackknife:
		return o, fmt.Errorf("audit: unknown adaptive base %q (split or jackknife)", o.Base)
	}
	for _, g := range o.Grid {
		if !(g >= 0 && g < 1) {
			return o, fmt.Errorf("audit: AgACI step size %g must be in [0, 1)", g)
		}
	}
	return o, nil
}

// Adaptive is what the intervals that adapt along time add to a result
// (nil without Options.Adaptive).
type Adaptive struct {
	Base   string // BaseSplit or BaseJackknife
	Pooled bool   // one state over all sequences in time order
	// Source is where ACI and AgACI take their base scores:
	// "calibration" (the calibration set, per forecast), "window" (the
	// series' last Window labelled forecasts), "past" (every earlier
	// labelled forecast of the series) or, on the jackknife base,
	// "residuals" (each forecast's own leave-one-block-out sets).
	Source        string
	Window        int
	Gamma         float64
	Grid          []float64
	Rho           float64
	RollingWindow int
	LabelDelay    int // rows after the target's row at which labels arrive
	// Chains are the series the states run along (per sequence and
	// horizon, or per horizon when pooled); Longest the most labelled
	// forecasts of one.
	Chains  int
	Longest int
	// Kinds compares the adaptive kinds with the others on the labelled
	// test values (nil without them): ACI, AgACI, NexCP, Rolling, then
	// jackknife+, in-sample and, with a calibration set, split conformal
	// and conformalized jackknife+.
	Kinds []AdaptiveKind
	// Notes say what limits the figures (short series, delays).
	Notes []string
}

// AdaptiveKind are one kind's metrics on the labelled test values, with
// coverage over time.
type AdaptiveKind struct {
	interval.KindSummary
	// WorstWindow is the lowest coverage of Adaptive.RollingWindow
	// consecutive labelled forecasts of one series (NaN when no series has
	// that many); Windows counts the series that have.
	WorstWindow float64
	Windows     int
	// Empty counts the empty intervals (ACI at alpha_t >= 1, or on the
	// jackknife base where the limits at alpha_t cross), which the
	// metrics take as the point prediction and count as not covering.
	Empty int
	// Bound is the guaranteed bound on |long-run miscoverage - alpha|
	// where one holds (ACI with every forecast labelled before the next
	// is made: sum over series of (max(alpha, 1-alpha) + gamma)/gamma,
	// over the labelled forecasts); NaN otherwise.
	Bound float64
	// Guarantee states the kind's guarantee as it holds.
	Guarantee string
	// Under are the series on which the kind under-covers (when there
	// are 2 to MaxSequenceTable series).
	Under []adaptive.SeriesUnder
}

// StepAdaptive are the adaptive limits of one test forecast; limits may
// be ±Inf; an empty ACI interval has both limits at the prediction and
// Empty set.
type StepAdaptive struct {
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
}

// family is one forecast's base family of intervals: pred ± q (split),
// or cjLimits of the jackknife+ interval [lo, up] (jackknife).
type family struct {
	pred, lo, up float64
	jk           bool
}

// at is the member of level q: the empty set (both limits at the
// prediction) at -Inf, the whole line at +Inf.
func (fm family) at(q float64) (lo, up float64, empty bool) {
	switch {
	case math.IsInf(q, -1):
		return fm.pred, fm.pred, true
	case fm.jk:
		lo, up = interval.CJLimits(fm.pred, fm.lo, fm.up, q)
		return lo, up, false
	}
	return fm.pred - q, fm.pred + q, false
}

// score is the smallest q whose member covers y.
func (fm family) score(y float64) float64 {
	if fm.jk {
		return interval.CJScore(fm.pred, fm.lo, fm.up, y)
	}
	return math.Abs(y - fm.pred)
}

// chain is the points of one series (and horizon) in time order, with
// the time each forecast is made and the time its label arrives.
type chain struct {
	pts     []int
	time    []float64
	arrival []float64
}

// chains groups the points by series: per sequence and horizon, or per
// horizon when pooled, ordered by time. Time is the row (per sequence) or
// the row's step value (pooled; beyond a sequence's last row the steps
// go on at its last spacing); the label of a forecast made at row r for
// horizon h arrives at row r+h+delay.
func adaptiveChains(p *problem, pts []point, pooled bool, delay int) []chain {
	type key struct{ seq, h int }
	idx := map[key]int{}
	var out []chain
	for i, pt := range pts {
		k := key{pt.seq, pt.f.H}
		if pooled {
			k.seq = -1
		}
		c, ok := idx[k]
		if !ok {
			c = len(out)
			idx[k] = c
			out = append(out, chain{})
		}
		out[c].pts = append(out[c].pts, i)
	}
	for c := range out {
		ch := &out[c]
		when := func(i int, row int) float64 {
			if !pooled {
				return float64(row)
			}
			steps := p.eval.Seqs[pts[i].seq].Steps
			n := len(steps)
			switch {
			case row < n:
				return steps[row]
			case n >= 2:
				return steps[n-1] + float64(row-n+1)*(steps[n-1]-steps[n-2])
			}
			return math.Inf(1)
		}
		slices.SortStableFunc(ch.pts, func(a, b int) int {
			return cmp.Or(cmp.Compare(when(a, pts[a].f.T), when(b, pts[b].f.T)), cmp.Compare(pts[a].seq, pts[b].seq))
		})
		for _, i := range ch.pts {
			ch.time = append(ch.time, when(i, pts[i].f.T))
			ch.arrival = append(ch.arrival, when(i, pts[i].f.T+pts[i].f.H+delay))
		}
	}
	return out
}

// adaptiveRun are the adaptive limits of every point, by point index.
type adaptiveRun struct {
	steps []StepAdaptive
}

// runChain runs the four adaptive kinds along one chain, writing the
// limits of its points into steps. fam gives each point's base family;
// fixed, when not nil, the sorted base scores of a point from the
// calibration set (else the chain's own window). sets, when not nil,
// gives each point's jackknife+ sets: ACI and AgACI then take the
// jackknife+ interval recomputed at their working level
// (jackknifeLevel) instead of the family at the base scores' quantile.
func runChain(o AdaptiveOptions, alpha float64, pts []point, ch chain, fam func(i int) family, fixed func(i int) []float64, sets jackknifeSets, steps []StepAdaptive) {
	K := len(o.Grid)
	win := sortedWindow{n: o.Window}
	var hist []float64 // every score, oldest first (NexCP)
	alphaT := alpha
	expert := make([]float64, K)
	for k := range expert {
		expert[k] = alpha
	}
	boaLo, boaUp := newBOA(K), newBOA(K)
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
	}
	var queue []pending
	var nbuf []wscore
	apply := func(q pending) {
		pt := pts[q.i]
		y := pt.y
		fm := fam(q.i)
		s := fm.score(y)
		alphaT = aciUpdate(alpha, alphaT, o.Gamma, q.aciEmpty || !(q.aciLo <= y && y <= q.aciUp))
		for k := range expert {
			// ACI's recursion scores the expert's own interval: an
			// unbounded one covers, whatever limit the aggregation
			// used for it.
			miss := q.exEmpty[k] || !(q.exOwn[k][0] <= y && y <= q.exOwn[k][1])
			expert[k] = aciUpdate(alpha, expert[k], o.Grid[k], miss)
		}
		if q.finite {
			boaLo.update(q.exLo, q.aggLo, pinballGrad(alpha/2, q.aggLo, y))
			boaUp.update(q.exUp, q.aggUp, pinballGrad(1-alpha/2, q.aggUp, y))
		}
		win.add(s)
		hist = append(hist, s)
	}
	for j, i := range ch.pts {
		// Labels that arrived before this forecast is made, in order.
		ready := queue[:0:0]
		rest := queue[:0:0]
		for _, q := range queue {
			if q.arrival < ch.time[j] {
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

		pt := pts[i]
		fm := fam(i)
		base := win.sorted
		if fixed != nil {
			base = fixed(i)
		}
		// member is the base family's interval at working level a, and
		// wlo, wup its widest finite member, where AgACI aggregates an
		// expert's unbounded limit.
		member := func(a float64) (lo, up float64, empty bool) { return fm.at(quantileAt(a, base)) }
		var wlo, wup float64
		if sets != nil {
			vm, vp := sets(i)
			member = func(a float64) (lo, up float64, empty bool) { return jackknifeLevel(pt.pred, a, vm, vp) }
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
		q := pending{i: i, arrival: ch.arrival[j], aciLo: st.ACILower, aciUp: st.ACIUpper, aciEmpty: st.Empty,
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
		if pt.has {
			queue = append(queue, q)
		}
	}
}

// adaptiveResult computes the adaptive intervals of the test points pts (whose
// jackknife+ and in-sample limits are jk, calibrated limits conf, nil
// without a calibration set cf) and attaches them to the steps of seqs,
// which sequences laid out from pts. sets (testLimits) gives the
// points' jackknife+ sets on the jackknife base, nil otherwise; note, when
// not empty, says why the base is scaled instead.
func adaptiveResult(p *problem, cf *calFit, pts []point, jk limits, conf []*interval.StepConformal, seqs []SequenceResult, sets jackknifeSets, note string) *Adaptive {
	o := *p.opt.Adaptive
	alpha := p.opt.Alpha
	ad := &Adaptive{Base: o.Base, Pooled: o.Pooled, Window: o.Window, Gamma: o.Gamma, Grid: slices.Clone(o.Grid), Rho: o.Rho, RollingWindow: o.RollingWindow, LabelDelay: o.LabelDelay}
	if note != "" {
		ad.Notes = append(ad.Notes, note)
	}
	fam := func(i int) family {
		return family{pred: pts[i].pred, lo: jk.lo[i], up: jk.up[i], jk: o.Base == BaseJackknife}
	}
	var fixed func(int) []float64
	switch {
	case cf != nil && o.Window == 0:
		ad.Source = "calibration"
		scores := map[forecast][]float64{}
		for k, c := range cf.points {
			if !c.has {
				continue
			}
			fm := family{pred: c.pred, lo: cf.lim.lo[k], up: cf.lim.up[k], jk: o.Base == BaseJackknife}
			scores[c.f] = append(scores[c.f], fm.score(c.y))
		}
		for _, v := range scores {
			slices.Sort(v)
		}
		fixed = func(i int) []float64 { return scores[pts[i].f] }
	case o.Window > 0:
		ad.Source = "window"
	default:
		ad.Source = "past"
	}
	if sets != nil {
		ad.Source = "residuals"
	}
	chains := adaptiveChains(p, pts, o.Pooled, o.LabelDelay)
	steps := make([]StepAdaptive, len(pts))
	delayed := false
	for _, ch := range chains {
		runChain(o, alpha, pts, ch, fam, fixed, sets, steps)
		n := 0
		for j, i := range ch.pts {
			if pts[i].has {
				n++
				if j+1 < len(ch.pts) && !(ch.arrival[j] < ch.time[j+1]) {
					delayed = true
				}
			}
		}
		ad.Longest = max(ad.Longest, n)
	}
	ad.Chains = len(chains)
	// Attach to the steps, in the order sequences laid them out.
	next := make([]int, len(seqs))
	for i, pt := range pts {
		st := steps[i]
		seqs[pt.seq].Steps[next[pt.seq]].Adaptive = &st
		next[pt.seq]++
	}
	if ad.Longest < o.RollingWindow {
		hint := "; pool the sequences in time order (--adaptive-pooled) when they are windows of one series"
		if o.Pooled {
			hint = ""
		}
		ad.Notes = append(ad.Notes, fmt.Sprintf("No series has %d labelled forecasts (the longest has %d): the worst rolling-window coverage is not measured, and the adaptive kinds have had little time to adapt%s.", o.RollingWindow, ad.Longest, hint))
	}
	if delayed {
		ad.Notes = append(ad.Notes, "Some forecasts are labelled only after the next forecast of their series is made (horizons beyond the next row, or several series at one time): the adaptive state is updated when the label arrives, and ACI's long-run bound, proved for immediate labels, holds only approximately.")
	}
	labelled := false
	for _, pt := range pts {
		labelled = labelled || pt.has
	}
	if !labelled {
		return ad
	}
	lv := p.level()
	n := len(pts)
	col := func(get func(*StepAdaptive) (float64, float64)) (lo, up []float64) {
		lo, up = make([]float64, n), make([]float64, n)
		for i := range steps {
			lo[i], up[i] = get(&steps[i])
		}
		return lo, up
	}
	names := chainNames(p, pts, chains, o.Pooled)
	add := func(kind string, lo, up []float64, empty []bool, guarantee string, bound float64) {
		k := AdaptiveKind{KindSummary: kindSummary(kind, lv, pts, lo, up, nil), Guarantee: guarantee, Bound: bound}
		k.WorstWindow, k.Windows = worstWindow(pts, chains, lo, up, empty, o.RollingWindow)
		if len(chains) > 1 && len(chains) <= adaptive.MaxSequenceTable {
			k.Under = adaptive.UnderCovering(names, seriesHits(pts, chains, lo, up, empty), 1-alpha, p.opt.timeLag())
		}
		for i, e := range empty {
			if e && pts[i].has {
				k.Empty++
			}
		}
		ad.Kinds = append(ad.Kinds, k)
	}
	empty := make([]bool, n)
	for i := range steps {
		empty[i] = steps[i].Empty
	}
	bound := math.NaN()
	if !delayed {
		labelledN := 0
		for _, pt := range pts {
			if pt.has {
				labelledN++
			}
		}
		bound = float64(len(chains)) * (math.Max(alpha, 1-alpha) + o.Gamma) / o.Gamma / float64(labelledN)
	}
	lo, up := col(func(s *StepAdaptive) (float64, float64) { return s.ACILower, s.ACIUpper })
	aciG := fmt.Sprintf("long-run: on every series of T forecasts, whatever the data, |miscoverage - %g| <= (max(alpha, 1 - alpha) + gamma)/(gamma T) (Gibbs and Candès 2021); no guarantee per forecast or per window", alpha)
	if wg := WindowGamma(alpha, o.RollingWindow); wg > 0 && o.Gamma >= wg {
		aciG = fmt.Sprintf("long-run: on every series of T forecasts, whatever the data, |miscoverage - %g| <= (max(alpha, 1 - alpha) + gamma)/(gamma T) (Gibbs and Candès 2021), and with gamma >= 1/(alpha W - 2) = %.3g every %d consecutive forecasts of a series miss at most %g (when each label arrives before the next forecast); no guarantee per forecast", alpha, wg, o.RollingWindow, 2*alpha)
	}
	add(KindACI, lo, up, empty, aciG, bound)
	lo, up = col(func(s *StepAdaptive) (float64, float64) { return s.AgACILower, s.AgACIUpper })
	add(KindAgACI, lo, up, nil, "none in finite samples: each of its ACI experts has ACI's long-run guarantee and the aggregation a regret bound (Zaffran et al. 2022)", math.NaN())
	lo, up = col(func(s *StepAdaptive) (float64, float64) { return s.NexCPLower, s.NexCPUpper })
	add(KindNexCP, lo, up, nil, fmt.Sprintf("coverage >= %g minus the rho-weighted total variation between the past scores' distributions and the new one's (Barber et al. 2023): exact for exchangeable scores, small under slow drift", 1-alpha), math.NaN())
	lo, up = col(func(s *StepAdaptive) (float64, float64) { return s.RollingLower, s.RollingUpper })
	add(KindRolling, lo, up, nil, fmt.Sprintf("%g when the window's scores and the next are exchangeable (split conformal); none under drift", 1-alpha), math.NaN())
	add(KindJackknife, jk.lo, jk.up, nil, fmt.Sprintf("%g with exact re-training and exchangeable sequences (jackknife+); none when the test period is not exchangeable with the training period", 1-2*alpha), math.NaN())
	add(KindInSample, jk.nlo, jk.nup, nil, "none", math.NaN())
	if conf != nil {
		slo, sup, clo, cup := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i, c := range conf {
			slo[i], sup[i], clo[i], cup[i] = c.SplitLower, c.SplitUpper, c.JackknifeLower, c.JackknifeUpper
		}
		g := fmt.Sprintf("%g per forecast when calibration and test sequences are exchangeable; none when the test period drifts from the calibration period", 1-alpha)
		add(KindSplit, slo, sup, nil, g, math.NaN())
		add(KindConformalJackknife, clo, cup, nil, g, math.NaN())
	}
	return ad
}

// worstWindow is the lowest coverage of w consecutive labelled forecasts
// along any chain (NaN when no chain has w), and the number of chains
// that have w.
func worstWindow(pts []point, chains []chain, lo, up []float64, empty []bool, w int) (float64, int) {
	worst, count := math.NaN(), 0
	for _, ch := range chains {
		var hit []int
		for _, i := range ch.pts {
			if !pts[i].has {
				continue
			}
			in := lo[i] <= pts[i].y && pts[i].y <= up[i] && (empty == nil || !empty[i])
			hit = append(hit, b2i(in))
		}
		if len(hit) < w {
			continue
		}
		count++
		sum := 0
		for k, h := range hit {
			sum += h
			if k >= w {
				sum -= hit[k-w]
			}
			if k >= w-1 {
				c := float64(sum) / float64(w)
				if math.IsNaN(worst) || c < worst {
					worst = c
				}
			}
		}
	}
	return worst, count
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
