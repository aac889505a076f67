// Package num holds the small numeric helpers over float64 values and
// slices that several of rnnaudit's packages use: dot products, norms,
// scaled sums, medians and the guards on non-finite figures. Each is
// written out in plain loops in a fixed order, so that results are the
// same bit for bit wherever they are used (gonum's floats runs some of
// these on assembly kernels whose summation order differs).
package num

import (
	"iter"
	"math"
	"slices"
)

// Dot returns the dot product of a and b, summed in index order. b must
// be at least as long as a.
func Dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// AddScaled adds a times src to dst element by element: dst[i] += a*src[i].
// dst must be at least as long as src.
func AddScaled(dst []float64, a float64, src []float64) {
	for i, v := range src {
		dst[i] += a * v
	}
}

// Scale multiplies every element of v by a in place.
func Scale(v []float64, a float64) {
	for i := range v {
		v[i] *= a
	}
}

// Norm returns the Euclidean norm of v, without guarding against
// overflow (the vectors here are gradients and steps of moderate size).
func Norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// Median returns the median of v (the mean of the two middle values for
// an even count), or 0 for an empty v. v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Finite reports whether v is neither infinite nor NaN.
func Finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// Ratio returns a/b, or NaN when b is 0: a figure that has no value
// rather than an infinite one.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// Count returns the number of true values in v.
func Count(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// Lag1 returns the lag-1 autocorrelation of the runs runs yields, pooled:
// the sum over runs of (r_t - m)(r_{t+1} - m) over the sum of (r_t - m)²,
// m the mean of every value, and the number of pairs (NaN and 0 without
// a pair; 0 when every value is m). runs is ranged twice (the mean, then
// the sums), and each run is read before the next is asked for, so a
// caller may hand out one reused buffer.
func Lag1(runs iter.Seq[[]float64]) (float64, int) {
	n, sum, pairs := 0, 0.0, 0
	for r := range runs {
		for _, v := range r {
			sum += v
			n++
		}
		pairs += max(len(r)-1, 0)
	}
	if pairs == 0 {
		return math.NaN(), 0
	}
	m := sum / float64(n)
	var num, den float64
	for r := range runs {
		for t, v := range r {
			den += (v - m) * (v - m)
			if t+1 < len(r) {
				num += (v - m) * (r[t+1] - m)
			}
		}
	}
	if den == 0 {
		return 0, pairs
	}
	return num / den, pairs
}

// SortByDesc orders idx by key[idx] descending, ties by index ascending
// (NaN keys last): the blocks by the size of their influence. It was an insertion sort, quadratic: 4 CPU seconds
// for the 100,000 blocks of benchmarks/scale, minutes at a million.
func SortByDesc(idx []int, key []float64) {
	slices.SortFunc(idx, func(a, b int) int {
		ka, kb := key[a], key[b]
		switch {
		case ka > kb || (kb != kb && ka == ka):
			return -1
		case ka < kb || (ka != ka && kb == kb):
			return 1
		}
		return a - b
	})
}

// Sub returns a - b as a new vector.
func Sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

// Cosine returns the cosine of the angle between a and b, NaN when
// either is zero: how well two steps (an estimate and an exact re-fit)
// agree in direction.
func Cosine(a, b []float64) float64 {
	na, nb := Norm(a), Norm(b)
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	return Dot(a, b) / (na * nb)
}
