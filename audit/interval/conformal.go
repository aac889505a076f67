package interval

import "math"

// Calibrated intervals (docs/design.md, section 6). A calibration set is
// m labelled sequences that the model was not trained on. Every quantity
// is computed per forecast (row t, horizon h), over the calibration
// values of that forecast, with the conformal quantile
//
//	q = the ceil((1 - alpha)(m + 1))-th smallest of m scores (+Inf when that exceeds m),
//
// which is UpperQuantile (the rank of the jackknife+ upper limit).
//
//   - Split conformal: the score is |y - f(x; theta_hat)|; the interval is
//     prediction ± q.
//   - Bonferroni: the same at level alpha / L, L the number of forecasts of
//     the test sequence whose target row lies inside it (its length, with
//     one output per step): by the union bound every value of a sequence
//     is covered at once with probability at least 1 - alpha.
//   - Conformalized jackknife+: the nested family of intervals
//     I(s) = [f - s (f - lower), f + s (upper - f)], s >= 0, scales the
//     point's own jackknife+ interval [lower, upper] about its prediction
//     f, so it keeps the jackknife+ shape (wider where the leave-one-out
//     models disagree). A side whose jackknife+ limit lies on the wrong
//     side of f counts as width 0; an unbounded side stays unbounded in
//     every member; I(+Inf) is the whole line. A calibration value's score
//     is the smallest s with y in I(s) (CJScore); the test interval is
//     I(q) (CJLimits).
//
// The guarantee (the standard split-conformal argument): the model and
// its leave-one-block-out models depend on the training data only, so the
// score is a fixed function of a sequence. If the calibration sequences
// and a test sequence are exchangeable (for example drawn independently
// from one population, and independent of the training data), then at
// every forecast (t, h) with m calibration values,
//
//	P(y in interval) >= 1 - alpha,
//
// marginally over the calibration set and the test sequence; and when the
// scores have no ties, P(y in interval) <= 1 - alpha + 1/(m + 1). The
// bound is per forecast; pooled coverage is an average of such
// probabilities; the Bonferroni intervals bound the joint coverage of a
// sequence. Nothing here needs the influence approximation to be good:
// a poor approximation makes the conformalized jackknife+ wider, not
// invalid.

// CJScore is the conformalized jackknife+ score of a value y at a point
// with prediction f and jackknife+ interval [lower, upper]: the smallest
// s >= 0 with y in I(s); 0 when an unbounded side reaches y, +Inf when
// the side towards y has width 0 (no member covers y). Its conformal
// quantile over calibration values is the scale that makes the
// jackknife+ intervals cover at the nominal level.
func CJScore(f, lower, upper, y float64) float64 {
	var dist, width float64
	switch {
	case y == f:
		return 0
	case y > f:
		dist, width = y-f, upper-f
	default:
		dist, width = f-y, f-lower
	}
	switch {
	case math.IsInf(width, 1):
		return 0
	case !(width > 0):
		return math.Inf(1)
	}
	return dist / width
}

// CJLimits is the member I(s) of the conformalized jackknife+ family of
// the interval [lower, upper] about the prediction f: the calibrated
// interval when s is the conformal quantile of the CJScore scores.
func CJLimits(f, lower, upper, s float64) (lo, up float64) {
	if math.IsInf(s, 1) {
		return math.Inf(-1), math.Inf(1)
	}
	side := func(limit float64, sign float64) float64 {
		if math.IsInf(limit, 0) {
			return limit
		}
		return f + sign*s*math.Max(sign*(limit-f), 0)
	}
	return side(lower, -1), side(upper, 1)
}

// ConformalForecast is what a calibration set fixes at one forecast (row,
// horizon) of a recurrent model: the quantities every calibrated interval
// of that forecast is built from, reported so that a reader can see
// where calibration values are too few.
type ConformalForecast struct {
	Row     int
	Horizon int
	M       int // calibration values
	// Pooled is how many calibration values HalfWidth and Scale were
	// taken over when M was too few and the nearest rows' were pooled
	// with them (PoolRows), 0 when the forecast's own sufficed.
	Pooled int
	// HalfWidth is the split-conformal half-width: the conformal quantile
	// (UpperQuantile) of the calibration |residuals| (+Inf when m <
	// 1/alpha - 1).
	HalfWidth float64
	// Scale is the conformalized jackknife+ scale s: 1 keeps the
	// jackknife+ interval, above 1 widens it (+Inf: unbounded).
	Scale float64
	// JackknifeCoverage is the fraction of the calibration values inside
	// their (unscaled) jackknife+ interval: held-out evidence on the
	// jackknife+ itself.
	JackknifeCoverage float64
}

// StepConformal are the calibrated limits of one test forecast, one pair
// per kind of calibrated interval, so that each forecast carries every
// interval a report compares; limits may be ±Inf.
type StepConformal struct {
	SplitLower      float64 // prediction - HalfWidth
	SplitUpper      float64 // prediction + HalfWidth
	BonferroniLower float64 // prediction - the conformal quantile at alpha / L
	BonferroniUpper float64 // prediction + the conformal quantile at alpha / L
	JackknifeLower  float64 // CJLimits with the forecast's Scale
	JackknifeUpper  float64
	// NormalisedLower and NormalisedUpper are normalised split conformal's
	// limits (NormalisedLimits), NaN when the fit has no scales.
	NormalisedLower, NormalisedUpper float64
	M                                int // calibration values at this forecast
}
