package interval

import (
	"math"
	"slices"
)

// Quantile rules (docs/design.md, section 5.3). With m values, the upper
// limit is the ceil((1-alpha)(m+1))-th smallest of V+ (+Inf when that
// exceeds m) and the lower limit the floor(alpha(m+1))-th smallest of V-
// (-Inf when that is below 1). A tolerance of 1e-9 keeps products such as 0.9 × 10
// from landing on the wrong integer through rounding.

// UpperRank is ceil((1-alpha)(m+1)), 1-based.
func UpperRank(alpha float64, m int) int {
	return int(math.Ceil((1-alpha)*float64(m+1) - 1e-9))
}

// LowerRank is floor(alpha(m+1)), 1-based.
func LowerRank(alpha float64, m int) int {
	return int(math.Floor(alpha*float64(m+1) + 1e-9))
}

// KthSmallest returns the k-th smallest (1-based) of v, reordering v. It
// is a quickselect whose partition has no data-dependent branches: on fresh
// data a branching partition mispredicts about every other comparison,
// which made selection several times slower than the arithmetic.
func KthSmallest(v []float64, k int) float64 {
	k--
	lo, hi := 0, len(v)
	for hi-lo > 16 {
		// Median of three as pivot.
		a, b, c := v[lo], v[lo+(hi-lo)/2], v[hi-1]
		if b < a {
			a, b = b, a
		}
		if c < b {
			b = c
			if b < a {
				b = a
			}
		}
		p := b
		// v[lo:j] < p <= v[j:hi]
		j := lo + partitionLess(v[lo:hi], p)
		switch {
		case k < j:
			hi = j
		case j > lo:
			lo = j
		default:
			// Nothing below p, the smallest value: split off the copies
			// of p (at least the pivot itself), so the range shrinks.
			// j2 == lo only when p is +Inf (every value left is +Inf:
			// the nextafter bound cannot exceed it) or NaN; either way p
			// is the answer, and the loop would otherwise not shrink.
			j2 := lo + partitionLess(v[lo:hi], math.Nextafter(p, math.Inf(1)))
			if k < j2 || j2 == lo {
				return p
			}
			lo = j2
		}
	}
	// Insertion sort of the small rest.
	for i := lo + 1; i < hi; i++ {
		for j := i; j > lo && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	return v[k]
}

// partitionLess moves the values of v below p to the front, branch-free,
// and returns how many there are.
func partitionLess(v []float64, p float64) int {
	j := 0
	for i, x := range v {
		v[i] = v[j]
		v[j] = x
		d := 0
		if x < p {
			d = 1
		}
		j += d
	}
	return j
}

// JackknifePlus returns the limits from V- (lower) and V+ (upper), each
// of m values; both slices are reordered. A NaN value (a perturbed model
// whose prediction or residual is not a number, as from a blown-up
// influence step) counts as unbounded on its side (-Inf in V-, +Inf in
// V+): it says nothing about where the limit is, and selection must not
// meet a NaN, which no ordering places.
func JackknifePlus(alpha float64, vminus, vplus []float64) (lower, upper float64) {
	InfForNaN(vminus, vplus)
	m := len(vplus)
	lower, upper = math.Inf(-1), math.Inf(1)
	if k := UpperRank(alpha, m); k >= 1 && k <= m {
		upper = KthSmallest(vplus, k)
	}
	if k := LowerRank(alpha, m); k >= 1 && k <= m {
		lower = KthSmallest(vminus, k)
	}
	return lower, upper
}

// InfForNaN maps NaN (a block whose prediction is not estimated) to -Inf
// in V- and +Inf in V+, so that such a block widens the interval.
func InfForNaN(vminus, vplus []float64) {
	for i, v := range vminus {
		if v != v {
			vminus[i] = math.Inf(-1)
		}
	}
	for i, v := range vplus {
		if v != v {
			vplus[i] = math.Inf(1)
		}
	}
}

// UpperQuantile is the ceil((1-alpha)(m+1))-th smallest of v (+Inf when
// beyond m): the half-width of the naive in-sample interval.
func UpperQuantile(alpha float64, v []float64) float64 {
	k := UpperRank(alpha, len(v))
	if k < 1 || k > len(v) {
		return math.Inf(1)
	}
	w := slices.Clone(v)
	return KthSmallest(w, k)
}

// MinResiduals is the number of residuals a forecast needs for a bounded
// jackknife+ interval at level alpha (JackknifePlus): ceil((1-alpha)(m+1))
// <= m exactly when m >= ceil(1/alpha) - 1 (9 at alpha 0.1, 19 at
// 0.05), in closed form (MinValues applies the same rule, by search, to
// calibration values).
func MinResiduals(alpha float64) int {
	// The small tolerance keeps 1/0.1 = 10 from rounding up to 11.
	return int(math.Ceil(1/alpha-1e-9)) - 1
}
