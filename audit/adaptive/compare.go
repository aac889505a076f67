package adaptive

import (
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// The comparison of the kinds on the labelled test values (Result.Kinds):
// each kind's metrics (measured by the caller), its coverage along the
// series, its widths counting every interval (an unbounded one as
// infinitely wide, or at the stated penalty in the interval score), its
// guarantee and, for the adaptive kinds, the one recommended.

// Summarize measures one kind's limits lo, up (per forecast) over the
// labelled forecasts: the caller's metrics, in its own order of values.
type Summarize func(kind string, lo, up []float64) interval.KindSummary

// Add appends kind's figures to r.Kinds: its metrics (sum), its figures
// along the chains (Along, with empty marking empty intervals, nil for
// none), its widths counting every interval (Widths), its guarantee
// and bound (NaN: none).
func (r *Result) Add(fc []Forecast, chains []Chain, names []string, kind string, lo, up []float64, empty []bool, guarantee string, bound float64, alpha float64, lag int, sum Summarize) {
	k := Along(fc, chains, names, lo, up, empty, r.RollingWindow, 1-alpha, lag)
	k.KindSummary, k.Guarantee, k.Bound = sum(kind, lo, up), guarantee, bound
	k.Unbounded, k.MedianWidth, k.P90Width, k.Winkler = Widths(fc, lo, up, empty, alpha, r.Penalty)
	r.Kinds = append(r.Kinds, k)
}

// AddOnline appends the adaptive kinds' figures (Online's order) from
// the limits Run wrote into steps and the chains' tallies, with their
// guarantees as o states them and the bounds that hold: ACI's
// (LongRunBound) when each label arrives before the next forecast and
// its step is constant, ACI clipped's and quantile tracking's for any
// delays and steps (Tally). Then it recommends one (Recommend).
func (r *Result) AddOnline(o Options, alpha float64, fc []Forecast, chains []Chain, names []string, steps []Step, tallies []Tally, delayed bool, lag int, sum Summarize) {
	n := len(steps)
	col := func(get func(*Step) (float64, float64, bool)) (lo, up []float64, empty []bool) {
		lo, up, empty = make([]float64, n), make([]float64, n), make([]bool, n)
		for i := range steps {
			lo[i], up[i], empty[i] = get(&steps[i])
		}
		return lo, up, empty
	}
	labelled, clipped, tracked := 0, 0.0, 0.0
	for _, t := range tallies {
		labelled += t.Labelled
		clipped += t.ClippedSum
		tracked += t.TrackingSum
	}
	aci := math.NaN()
	if !delayed && o.Decay == 0 {
		aci = LongRunBound(alpha, o.Gamma, len(chains), labelled)
	}
	perForecast := func(s float64) float64 {
		if math.IsInf(s, 0) || labelled == 0 {
			return math.NaN()
		}
		return s / float64(labelled)
	}
	for _, kind := range Online() {
		var lo, up []float64
		var empty []bool
		bound := math.NaN()
		switch kind {
		case KindACI:
			lo, up, empty = col(func(s *Step) (float64, float64, bool) { return s.ACILower, s.ACIUpper, s.Empty })
			bound = aci
		case KindAgACI:
			lo, up, _ = col(func(s *Step) (float64, float64, bool) { return s.AgACILower, s.AgACIUpper, false })
		case KindNexCP:
			lo, up, _ = col(func(s *Step) (float64, float64, bool) { return s.NexCPLower, s.NexCPUpper, false })
		case KindRolling:
			lo, up, _ = col(func(s *Step) (float64, float64, bool) { return s.RollingLower, s.RollingUpper, false })
		case KindACIClipped:
			lo, up, empty = col(func(s *Step) (float64, float64, bool) { return s.ClippedLower, s.ClippedUpper, s.ClippedEmpty })
			bound = perForecast(clipped)
		case KindQuantileTracking:
			lo, up, empty = col(func(s *Step) (float64, float64, bool) { return s.TrackingLower, s.TrackingUpper, s.TrackingEmpty })
			bound = perForecast(tracked)
		case KindPID:
			lo, up, empty = col(func(s *Step) (float64, float64, bool) { return s.PIDLower, s.PIDUpper, s.PIDEmpty })
		}
		if kind == KindAgACI || kind == KindNexCP || kind == KindRolling {
			empty = nil
		}
		r.Add(fc, chains, names, kind, lo, up, empty, Guarantee(kind, alpha, o), bound, alpha, lag, sum)
	}
	r.Recommended, r.RecommendedHolds = Recommend(r.Kinds, alpha)
	if r.Recommended != "" {
		r.Notes = append(r.Notes, recommendNote(r.Recommended, r.RecommendedHolds, alpha))
	}
}

// Widths are a kind's widths counting every labelled forecast (limits
// lo, up; empty, when not nil, marks empty intervals, of width 0): the
// share of unbounded intervals, the median and 90th percentile of the
// width (nearest rank, the ceil(p n)-th smallest; +Inf when more than
// half, or a tenth, of the intervals are unbounded) and the interval
// (Winkler) score at alpha, width + 2/alpha times the distance by which
// the target misses, with penalty as the width of an unbounded
// interval. NaN without labelled forecasts.
func Widths(fc []Forecast, lo, up []float64, empty []bool, alpha, penalty float64) (unbounded, median, p90, winkler float64) {
	var w []float64
	inf, score := 0, 0.0
	for i, f := range fc {
		if !f.Labelled {
			continue
		}
		a, b := lo[i], up[i]
		width := b - a
		if empty != nil && empty[i] {
			a, b, width = f.Pred, f.Pred, 0
		}
		if math.IsInf(a, 0) || math.IsInf(b, 0) {
			inf++
			width = math.Inf(1)
		}
		w = append(w, width)
		s := math.Min(width, penalty)
		if f.Y < a {
			s += 2 / alpha * (a - f.Y)
		}
		if f.Y > b {
			s += 2 / alpha * (f.Y - b)
		}
		score += s
	}
	if len(w) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(w)
	rank := func(p float64) float64 { return w[max(1, int(math.Ceil(p*float64(len(w)))))-1] }
	return float64(inf) / float64(len(w)), rank(0.5), rank(0.9), score / float64(len(w))
}

// WidthPenalty is the width at which the interval score counts an
// unbounded interval: twice the range of the labelled targets of fc (an
// interval that wide covers every target with room to spare), 0 without
// labelled targets.
func WidthPenalty(fc []Forecast) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range fc {
		if f.Labelled {
			lo, hi = math.Min(lo, f.Y), math.Max(hi, f.Y)
		}
	}
	if lo > hi {
		return 0
	}
	return 2 * (hi - lo)
}

// Recommend picks the adaptive kind to use among kinds (those of
// Online): of the kinds with no unbounded interval whose long-run
// coverage is at least 1 - alpha - 0.01 and whose worst window (where
// measured) is at least 1 - 2 alpha, the one of smallest median width
// (holds true). When none holds, the finite kind of highest coverage
// (holds false); "" when no kind is finite.
func Recommend(kinds []Kind, alpha float64) (kind string, holds bool) {
	var best, fallback *Kind
	for i := range kinds {
		k := &kinds[i]
		if !slices.Contains(Online(), k.Kind) || k.Infinite > 0 || math.IsNaN(k.Coverage) {
			continue
		}
		if fallback == nil || k.Coverage > fallback.Coverage {
			fallback = k
		}
		ok := k.Coverage >= 1-alpha-0.01 && (math.IsNaN(k.WorstWindow) || k.WorstWindow >= 1-2*alpha-1e-12)
		if ok && (best == nil || k.MedianWidth < best.MedianWidth) {
			best = k
		}
	}
	switch {
	case best != nil:
		return best.Kind, true
	case fallback != nil:
		return fallback.Kind, false
	}
	return "", false
}

// recommendNote says what the recommendation rests on.
func recommendNote(kind string, holds bool, alpha float64) string {
	if holds {
		return fmt.Sprintf("Recommended over time: %s, the narrowest (median width) adaptive kind with no unbounded interval whose coverage is at least %g and whose worst window is at least %g.", kind, 1-alpha-0.01, 1-2*alpha)
	}
	return fmt.Sprintf("No adaptive kind with no unbounded interval reached coverage %g with a worst window of at least %g: %s, the finite kind of highest coverage, is shown as the recommendation.", 1-alpha-0.01, 1-2*alpha, kind)
}
