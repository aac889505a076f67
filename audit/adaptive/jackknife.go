package adaptive

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// The jackknife+ base of ACI and AgACI (docs/design.md, sections 5 and
// 7). Gibbs and Candès's ACI needs a family of intervals nested in the
// working level a: with the jackknife+ base the member at level 1 - a is
// the jackknife+ interval recomputed at miscoverage a from the
// forecast's leave-one-block-out sets V- and V+ (the floor(a(m+1))-th
// smallest of V- and the ceil((1-a)(m+1))-th smallest of V+), not the
// interval at alpha scaled about the prediction. At a = alpha it is the
// jackknife+ interval; a <= 0 gives the whole line, a >= 1 (or a level
// at which the two limits cross) the empty set.

// jackknifeLevel is the jackknife+ interval at miscoverage a (the ranks
// of package interval) from the sorted sets vm and vp of a forecast whose
// prediction is pred: the whole line at a <= 0 (or when a rank falls
// outside 1..m), empty (both limits at pred) at a >= 1 or when the
// lower limit exceeds the upper.
func jackknifeLevel(pred, a float64, vm, vp []float64) (lo, up float64, empty bool) {
	if a >= 1 {
		return pred, pred, true
	}
	m := len(vp)
	lo, up = math.Inf(-1), math.Inf(1)
	if k := interval.UpperRank(a, m); k >= 1 && k <= m {
		up = vp[k-1]
	}
	if k := interval.LowerRank(a, m); k >= 1 && k <= m {
		lo = vm[k-1]
	}
	if lo > up {
		return pred, pred, true
	}
	return lo, up, false
}

// jackknifeWidest is the widest finite member of the jackknife+ family of
// the sorted sets vm and vp: the smallest finite value of V- and the
// largest finite value of V+ (infinite when there is none). AgACI
// aggregates an expert's unbounded limit at it.
func jackknifeWidest(vm, vp []float64) (lo, up float64) {
	lo, up = math.Inf(-1), math.Inf(1)
	for _, v := range vm {
		if !math.IsInf(v, 0) {
			lo = v
			break
		}
	}
	for k := len(vp) - 1; k >= 0; k-- {
		if !math.IsInf(vp[k], 0) {
			up = vp[k]
			break
		}
	}
	return lo, up
}
