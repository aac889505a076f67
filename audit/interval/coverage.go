package interval

import (
	"math"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// CalibrationPoint is one point of a calibration curve: the fraction of
// labelled values inside their jackknife+ interval at level Alpha,
// against the nominal 1 - Alpha. A curve over many levels shows where the
// intervals are too narrow or too wide, which one level cannot.
type CalibrationPoint struct {
	Alpha    float64
	Nominal  float64
	Coverage float64
}

// CountCovered adds to hits[a] one for every level alphas[a] whose
// jackknife+ interval from V- = vm and V+ = vp covers y. The k-th
// smallest of V+ is at least y exactly when fewer than k values of V+ lie
// below y, and the k-th smallest of V- is at most y when at least k
// values of V- do not exceed it: two counts decide the coverage at every
// level, where selecting the limits would cost a selection per level. It
// must read the values before JackknifePlus, which reorders them and
// maps NaN to infinities: here a NaN value counts on neither side.
func CountCovered(alphas []float64, y float64, vm, vp []float64, hits []int) {
	m, below, notAbove := len(vp), 0, 0
	for i, hi := range vp {
		if hi < y {
			below++
		}
		if vm[i] <= y {
			notAbove++
		}
	}
	CoveredFromCounts(alphas, m, below, notAbove, hits)
}

// CoveredFromCounts adds to hits[a] one for every level alphas[a] at
// which the jackknife+ interval from m values covers y, given the counts
// of CountCovered: below values of V+ lie below y and notAbove values of
// V- do not exceed it. It is the decision of CountCovered for callers
// that count without forming the values.
func CoveredFromCounts(alphas []float64, m, below, notAbove int, hits []int) {
	for a, alpha := range alphas {
		if below < UpperRank(alpha, m) && notAbove >= LowerRank(alpha, m) {
			hits[a]++
		}
	}
}

// Curve is the calibration curve over the levels alphas from coverage
// counts per range of values (each as CountCovered fills it) over total
// labelled values. The counts are integers added range by range, so the
// curve does not depend on the order in which ranges were counted.
func Curve(alphas []float64, counts [][]int, total int) []CalibrationPoint {
	hits := make([]float64, len(alphas))
	for _, h := range counts {
		for a, v := range h {
			hits[a] += float64(v)
		}
	}
	out := make([]CalibrationPoint, len(alphas))
	for a, alpha := range alphas {
		out[a] = CalibrationPoint{Alpha: alpha, Nominal: 1 - alpha, Coverage: num.Ratio(hits[a], float64(total))}
	}
	return out
}

// CoverageTolerance is the sampling error allowed when n values' coverage
// is compared with a level p: two binomial standard errors, at least one
// percentage point. A measured coverage below p by less than this is not
// evidence that the intervals under-cover.
func CoverageTolerance(p float64, n int) float64 {
	return math.Max(0.01, 2*math.Sqrt(p*(1-p)/float64(max(1, n))))
}

// MinValues is the smallest number of values m for which the quantile of
// UpperQuantile at alpha is finite, ceil((1-alpha)(m+1)) <= m: how many
// calibration values a forecast needs for bounded split-conformal and
// conformalized jackknife+ intervals (at alpha / L for Bonferroni).
func MinValues(alpha float64) int {
	m := int(math.Max(0, math.Floor(1/alpha-2)))
	for UpperRank(alpha, m) > m {
		m++
	}
	return m
}

// ShortSteps returns the rows whose coverage falls below floor by more
// than sampling error (CoverageTolerance at floor over the row's values),
// among the rows with at least minValues values, in row order; coverage
// and n are per row. A row's coverage below its guarantee within
// sampling error is not evidence against the intervals; with few values
// one miss moves it too far to say anything.
func ShortSteps(coverage []float64, n []int, floor float64, minValues int) []int {
	var short []int
	for t, c := range coverage {
		if n[t] >= minValues && c < floor-CoverageTolerance(floor, n[t]) {
			short = append(short, t)
		}
	}
	return short
}
