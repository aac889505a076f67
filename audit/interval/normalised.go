package interval

import "math"

// Normalised split conformal (docs/design.md, section 6.6). The split-
// conformal score |y - f| treats every forecast alike, so its interval f
// ± q is as wide where the model is sure as where it is not. Dividing
// the score by a per-forecast scale s that does not look at y (Lei et
// al. 2018, section 5.2; Papadopoulos et al. 2008), here the spread of
// the leave-one-block-out models' predictions at the forecast
// (PredictionSD), gives the score |y - f| / s and the interval f ± q s, q
// the conformal quantile of the calibration scores: wider where the
// leave-one-out models disagree. The scale is a fixed function of a
// sequence (it depends on the training data and the model, not on y),
// so the split-conformal guarantee of the calibrated kinds holds
// unchanged for exchangeable calibration and test sequences; a poor
// scale makes the intervals wider, not invalid.

// KindNormalised is normalised split conformal's name in results and
// reports (a KindSummary.Kind).
const KindNormalised = "normalised_split_conformal"

// PredictionSD is the standard deviation (divisor n) of the finite
// values of preds, the predictions of the leave-one-block-out models at
// one forecast: the scale of normalised split conformal. NaN with fewer
// than two finite values (no spread to measure).
func PredictionSD(preds []float64) float64 {
	n, mean := 0, 0.0
	for _, v := range preds {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			n++
			mean += (v - mean) / float64(n)
		}
	}
	if n < 2 {
		return math.NaN()
	}
	ss := 0.0
	for _, v := range preds {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ss += (v - mean) * (v - mean)
		}
	}
	return math.Sqrt(ss / float64(n))
}

// NormalisedScore is the normalised score |y - f| / s of a value y at a
// forecast f with scale s: 0 when y == f, +Inf when s is not a positive
// number (no finite multiple of it reaches y).
func NormalisedScore(f, s, y float64) float64 {
	d := math.Abs(y - f)
	switch {
	case d == 0:
		return 0
	case !(s > 0) || math.IsInf(s, 1):
		return math.Inf(1)
	}
	return d / s
}

// NormalisedLimits is the interval f ± q s; the whole line when q is
// +Inf or s is not a finite non-negative number. The half-width q s is
// rounded up by a few units in the last place: q is some value's score
// |y - f| / s, rounded, and q s and f ± q s round again, so without it
// the value whose score is the quantile itself could fall just outside
// the interval its own quantile makes.
func NormalisedLimits(f, s, q float64) (lo, up float64) {
	if math.IsInf(q, 1) || !(s >= 0) || math.IsInf(s, 1) {
		return math.Inf(-1), math.Inf(1)
	}
	h := q * s
	h += h * 0x1p-50 // 4 units in the last place of h
	return f - h, f + h
}
