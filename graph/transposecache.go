package graph

import (
	"slices"

	"github.com/rnnaudit/rnnaudit/internal/asm/f64"
)

// This file: the transposes of forward values, made once per forward pass.
//
// The backward pass of a matrix product C = A B needs B^T (gA += gC B^T),
// which the product kernel copies out at every call. For the recurrent
// weight of an unrolled RNN that is the same small matrix at every time
// step, and a dense Hessian runs one second-order pass per column: ten
// copies of the 20×20 weight per batch and column for the paper's RNN,
// 3% of its time. The State keeps each transpose until its next Forward,
// the only pass that changes forward values.

// transposeCache holds the transposes of forward values made since the
// last Forward, by the address of their first element and their length.
type transposeCache struct {
	m    map[sparsityKey][]float64
	bufs [][]float64 // transposes, their storage reused from pass to pass
	used int         // bufs[:used] are in m
}

// transposeMax is the largest matrix whose transpose is kept.
const transposeMax = 4096

// reset forgets every transpose: the forward values are about to change.
func (c *transposeCache) reset() {
	clear(c.m)
	c.used = 0
}

// gemmTransB is f64.Gemm(false, true, m, n, k, 1, a, b, 1, c) for b (n×k)
// a forward value of the State, unchanged since its last Forward: b's
// transpose is made once per forward pass.
func (ex *exec) gemmTransB(m, n, k int, a, b []float64, beta float64, c []float64) {
	if ex == nil || n*k > transposeMax || n*k == 0 {
		f64.Gemm(false, true, m, n, k, 1, a, b, beta, c)
		return
	}
	tc := &ex.transposes
	key := sparsityKey{&b[0], n * k}
	bt, ok := tc.m[key]
	if !ok {
		if tc.used == len(tc.bufs) {
			tc.bufs = append(tc.bufs, nil)
		}
		bt = slices.Grow(tc.bufs[tc.used][:0], n*k)[:n*k]
		tc.bufs[tc.used] = bt
		tc.used++
		f64.TransposeTo(bt, b, n, k)
		if tc.m == nil {
			tc.m = map[sparsityKey][]float64{}
		}
		tc.m[key] = bt
	}
	f64.GemmTransposed(m, n, k, 1, a, b, bt, beta, c)
}
