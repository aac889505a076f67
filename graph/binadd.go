package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// This file: the cotangents of a sum or difference's inputs.

// addCotangent adds g, the cotangent of a binK sum or difference (its
// negation when sub), to gx, the cotangent of an input read through idx
// (as at reads it): a vector addition where the input has the result's
// shape, one running sum where it is a single value broadcast (a bias
// of a one-output head: a thousand indexed additions into one place per
// pass), else entry by entry. Each is the same sequence of additions as
// the indexed loop, bit for bit.
func addCotangent(gx []float64, idx []int32, g []float64, sub bool) {
	switch {
	case idx == nil && !sub:
		f64.AddTo(gx[:len(g)], g)
	case len(gx) == 1:
		s := gx[0]
		if sub {
			for _, v := range g {
				s -= v
			}
		} else {
			for _, v := range g {
				s += v
			}
		}
		gx[0] = s
	case sub:
		for i, v := range g {
			gx[at(idx, i)] -= v
		}
	default:
		for i, v := range g {
			gx[at(idx, i)] += v
		}
	}
}
