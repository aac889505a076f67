package audit

import (
	"math"
	"slices"
)

// Quantile rules of DESIGN section 5. With m values, the upper limit is
// the ceil((1-alpha)(m+1))-th smallest of V+ (+Inf when that exceeds m)
// and the lower limit the floor(alpha(m+1))-th smallest of V- (-Inf when
// that is below 1). A tolerance of 1e-9 keeps products such as 0.9 × 10
// from landing on the wrong integer through rounding.

// upperRank is ceil((1-alpha)(m+1)), 1-based.
func upperRank(alpha float64, m int) int {
	return int(math.Ceil((1-alpha)*float64(m+1) - 1e-9))
}

// lowerRank is floor(alpha(m+1)), 1-based.
func lowerRank(alpha float64, m int) int {
	return int(math.Floor(alpha*float64(m+1) + 1e-9))
}

// kthSmallest returns the k-th smallest (1-based) of v, reordering v.
func kthSmallest(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	k--
	for lo < hi {
		// Median of three as pivot.
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		p := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// jackknifePlus returns the limits from V- (lower) and V+ (upper), each
// of m values; both slices are reordered.
func jackknifePlus(alpha float64, vminus, vplus []float64) (lower, upper float64) {
	m := len(vplus)
	lower, upper = math.Inf(-1), math.Inf(1)
	if k := upperRank(alpha, m); k >= 1 && k <= m {
		upper = kthSmallest(vplus, k)
	}
	if k := lowerRank(alpha, m); k >= 1 && k <= m {
		lower = kthSmallest(vminus, k)
	}
	return lower, upper
}

// upperQuantile is the ceil((1-alpha)(m+1))-th smallest of v (+Inf when
// beyond m): the half-width of the naive in-sample interval.
func upperQuantile(alpha float64, v []float64) float64 {
	k := upperRank(alpha, len(v))
	if k < 1 || k > len(v) {
		return math.Inf(1)
	}
	w := slices.Clone(v)
	return kthSmallest(w, k)
}
