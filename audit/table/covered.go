package table

import "github.com/rnnaudit/rnnaudit/audit/interval"

// countCovered adds to hits[a] one for every level alphas[a] whose
// jackknife+ interval from V- = vm and V+ = vp covers y: fewer than
// UpperRank values of V+ below y and at least LowerRank values of V- not
// above it. A NaN value counts on neither side.
func countCovered(alphas []float64, y float64, vm, vp []float64, hits []int) {
	m, below, notAbove := len(vp), 0, 0
	for i, hi := range vp {
		if hi < y {
			below++
		}
		if vm[i] <= y {
			notAbove++
		}
	}
	coveredFromCounts(alphas, m, below, notAbove, hits)
}

// coveredFromCounts adds to hits[a] one for every level alphas[a] at
// which the jackknife+ interval from m values, below of V+ lying below y
// and notAbove of V- not exceeding it, covers y (countCovered).
func coveredFromCounts(alphas []float64, m, below, notAbove int, hits []int) {
	for a, alpha := range alphas {
		if below < interval.UpperRank(alpha, m) && notAbove >= interval.LowerRank(alpha, m) {
			hits[a]++
		}
	}
}
