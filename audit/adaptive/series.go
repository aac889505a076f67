package adaptive

import (
	"fmt"
	"math"
	"strings"
)

// A kind's figures along the series (Along): its worst rolling window,
// and the series that under-cover. The kind's metrics pool every series;
// a series that under-covers by more than its dependence-aware tolerance
// is listed, with the coverage of its first and last thirds (thirds),
// which names where it loses coverage.

// SeriesUnder is one series on which a kind under-covers: its
// coverage over Points labelled forecasts is below 1 - alpha by more than
// the dependence-aware Tolerance; Early and Late are the coverages of its
// first and last thirds and Drift whether they differ by more than
// their sampling tolerance.
type SeriesUnder struct {
	ID          string
	Points      int
	Coverage    float64
	Tolerance   float64
	Early, Late float64
	Drift       bool
}

// underCovering returns the series (named by names) whose 0/1 coverage
// values hits, in time order, fall below nominal by more than their
// dependence-aware tolerance (DependentTolerance with the Newey-West
// inflation at lag lag). Series of fewer than six values are not judged.
func underCovering(names []string, hits [][]float64, nominal float64, lag int) []SeriesUnder {
	var out []SeriesUnder
	for c, h := range hits {
		if len(h) < 6 {
			continue
		}
		sum := 0.0
		for _, v := range h {
			sum += v
		}
		u := SeriesUnder{ID: names[c], Points: len(h), Coverage: sum / float64(len(h))}
		infl := neweyWest([][]float64{h}, lag)
		u.Tolerance = DependentTolerance(nominal, len(h), infl)
		if !(u.Coverage < nominal-u.Tolerance) {
			continue
		}
		u.Early, u.Late, u.Drift = thirds(h, nominal, infl)
		out = append(out, u)
	}
	return out
}

// hits are the 0/1 coverage values of one kind (limits lo, up per
// forecast; empty, when not nil, marks empty intervals, which do not
// cover) along each chain's labelled forecasts, in time order.
func hits(fc []Forecast, chains []Chain, lo, up []float64, empty []bool) [][]float64 {
	out := make([][]float64, len(chains))
	for c, ch := range chains {
		for _, i := range ch.Points {
			if !fc[i].Labelled {
				continue
			}
			y := fc[i].Y
			in := lo[i] <= y && y <= up[i] && (empty == nil || !empty[i])
			out[c] = append(out[c], float64(b2i(in)))
		}
	}
	return out
}

// worstWindow is the lowest coverage of w consecutive values of any
// series of hits (NaN when no series has w), and the number of series
// that have w.
func worstWindow(hits [][]float64, w int) (float64, int) {
	worst, count := math.NaN(), 0
	for _, hit := range hits {
		if len(hit) < w {
			continue
		}
		count++
		sum := 0.0
		for k, h := range hit {
			sum += h
			if k >= w {
				sum -= hit[k-w]
			}
			if k >= w-1 {
				c := sum / float64(w)
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

// Along are one kind's figures along the series chains of the forecasts
// fc, its limits lo and up per forecast (empty, when not nil, marks
// empty intervals, which do not cover): the lowest coverage of w
// consecutive labelled forecasts of a series and the number of series
// that have w (Kind.WorstWindow, Windows), the empty intervals among the
// labelled forecasts (Kind.Empty) and, when there are 2 to
// MaxSequenceTable series, those (named by names, one per chain) whose
// coverage falls below nominal by more than their dependence-aware
// tolerance at Newey-West lag lag (Kind.Under). The other fields of Kind
// are left for the caller.
func Along(fc []Forecast, chains []Chain, names []string, lo, up []float64, empty []bool, w int, nominal float64, lag int) Kind {
	var k Kind
	h := hits(fc, chains, lo, up, empty)
	k.WorstWindow, k.Windows = worstWindow(h, w)
	if len(chains) > 1 && len(chains) <= MaxSequenceTable {
		k.Under = underCovering(names, h, nominal, lag)
	}
	for i, e := range empty {
		if e && fc[i].Labelled {
			k.Empty++
		}
	}
	return k
}

// LongRunBound is ACI's guaranteed bound on |long-run miscoverage -
// alpha| over labelled forecasts in series series, each label known
// before the next forecast of its series is made (Gibbs and Candès 2021,
// Proposition 4.1, summed over the series): series (max(alpha, 1 -
// alpha) + gamma) / (gamma labelled).
func LongRunBound(alpha, gamma float64, series, labelled int) float64 {
	return float64(series) * (math.Max(alpha, 1-alpha) + gamma) / gamma / float64(labelled)
}

// Guarantee states the guarantee of the adaptive kind (KindACI,
// KindAgACI, KindNexCP or KindRolling) at miscoverage alpha with the
// options o, as the method's paper states it; "" for other kinds.
func Guarantee(kind string, alpha float64, o Options) string {
	switch kind {
	case KindACI, KindAgACI:
		if o.Decay > 0 {
			return finiteGuarantee(kind, alpha, o)
		}
	}
	switch kind {
	case KindACI:
		if wg := WindowGamma(alpha, o.RollingWindow); wg > 0 && o.Gamma >= wg {
			return fmt.Sprintf("long-run: on every series of T forecasts, whatever the data, |miscoverage - %g| <= (max(alpha, 1 - alpha) + gamma)/(gamma T) (Gibbs and Candès 2021), and with gamma >= 1/(alpha W - 2) = %.3g every %d consecutive forecasts of a series miss at most %g (when each label arrives before the next forecast); no guarantee per forecast", alpha, wg, o.RollingWindow, 2*alpha)
		}
		return fmt.Sprintf("long-run: on every series of T forecasts, whatever the data, |miscoverage - %g| <= (max(alpha, 1 - alpha) + gamma)/(gamma T) (Gibbs and Candès 2021); no guarantee per forecast or per window", alpha)
	case KindAgACI:
		return "none in finite samples: each of its ACI experts has ACI's long-run guarantee and the aggregation a regret bound (Zaffran et al. 2022)"
	case KindNexCP:
		return fmt.Sprintf("coverage >= %g minus the rho-weighted total variation between the past scores' distributions and the new one's (Barber et al. 2023): exact for exchangeable scores, small under slow drift", 1-alpha)
	case KindRolling:
		return fmt.Sprintf("%g when the window's scores and the next are exchangeable (split conformal); none under drift", 1-alpha)
	}
	return finiteGuarantee(kind, alpha, o)
}

// finiteGuarantee states the guarantee of the kinds that stay finite,
// and of any online kind whose steps decay.
func finiteGuarantee(kind string, alpha float64, o Options) string {
	var g string
	switch kind {
	case KindACIClipped:
		g = fmt.Sprintf("long-run, restated for the clipped form: ACI's recursion with each unbounded interval replaced by the member at %g times the largest score seen, so never unbounded; on every series of T forecasts, whatever the data, |miscoverage - %g| <= R (1/g_1 + 1/g_T + sum |1/g_t - 1/g_{t-1}|)/(2T), g_t the steps (R/(gamma T) for a constant step), with R = 1 + g_max (2 + 2d + E), E the misses at a working level <= 0 (a score beyond the clipped quantile) and d the most labels pending at a forecast (Gibbs and Candès 2021's argument); no guarantee per forecast", o.Clip, alpha)
	case KindQuantileTracking:
		g = fmt.Sprintf("long-run: for every sequence of scores in [0, B], |miscoverage - %g| <= (B + eta)/(eta T) with a constant step eta (Angelopoulos, Candès and Tibshirani 2023); for the scale-free steps taken here (eta_t = %g times the largest recent score), |miscoverage - alpha| <= R (1/eta_1 + 1/eta_T + sum |1/eta_t - 1/eta_{t-1}|)/(2T) with R = B + 2 eta_max (1 + d), d the most labels pending at a forecast (Angelopoulos, Barber and Bates 2024); never unbounded; no guarantee per forecast", alpha, o.Step)
	case KindPID:
		var parts []string
		if o.Integrator >= 0 {
			parts = append(parts, fmt.Sprintf("an integrator K_I tan(S log(n+1)/(C_sat (n+1))) in units of the scores' scale (K_I = %g, C_sat = %g), S the misses minus %g n after n labels, limited to %g times the largest score seen", o.Integrator, o.Saturation, alpha, o.Clip))
		}
		if o.Base == BaseSplit && !o.NoScorecast {
			parts = append(parts, "the jackknife+ half-width as scorecaster")
		}
		with := "quantile tracking alone (no integrator, no scorecaster)"
		if len(parts) > 0 {
			with = "quantile tracking with " + strings.Join(parts, " and ")
		}
		g = fmt.Sprintf("long-run: %s; for scores bounded by B and an integrator that saturates (at least B once the error sum exceeds c h(t)), |miscoverage - %g| <= (c h(T) + 1)/T, which tends to 0, whatever the scorecaster (Angelopoulos, Candès and Tibshirani 2023); the limit of the integrator makes it saturate only for scores up to that limit; never unbounded; no guarantee per forecast", with, alpha)
	case KindACI, KindAgACI:
		g = Guarantee(kind, alpha, Options{Gamma: o.Gamma}) // no window bound once the step decays
	default:
		return ""
	}
	if o.Decay > 0 {
		g += fmt.Sprintf("; the steps decay as n^-%g, which keeps the long-run bound (it grows as T^%g/T) and, for exchangeable scores, brings the coverage at each time close to %g, not only on average (Angelopoulos, Barber and Bates 2024)", o.Decay, o.Decay, 1-alpha)
	}
	return g
}
