package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// This file: the addend of a matrix product's tangent, dC = dD + dA B + A dB.

// jvpSeed sets dout to the tangent of the addend (broadcast as in the
// forward pass), or to zero when there is none.
func (k *matmulK) jvpSeed(dout *Tensor, din []*Tensor) {
	if !k.add || din[2] == nil {
		clear(dout.F)
		return
	}
	d := din[2].F
	switch {
	case k.addRow:
		for o := 0; o < len(dout.F); o += k.n {
			copy(dout.F[o:o+k.n], d)
		}
	case k.addIdx == nil:
		copy(dout.F, d)
	default:
		for i, j := range k.addIdx {
			dout.F[i] = d[j]
		}
	}
}

// jvpAddend sets dout = dD + dA B in one pass of the AVX-512 kernel, as
// the forward pass does (f64.GemmAddend), when there is one product, the
// addend has a tangent and is dout's shape or one repeated row, and dA
// is dense; it reports whether it did. It gives the same bits as
// jvpSeed followed by f64.Gemm with beta 1 (the same kernel, reading the
// addend from dD instead of a copy in dout), without the copy: the
// recurrent products of an unrolled RNN copied their input projection's
// tangent at every step of every column of a dense Hessian.
func (k *matmulK) jvpAddend(ex *exec, dout *Tensor, din []*Tensor, b []float64) bool {
	if !k.add || din[2] == nil || din[0] == nil || len(k.ia) != 1 || k.n < 4 || k.k < 1 || (k.addIdx != nil && !k.addRow) {
		return false
	}
	dA := din[0].F[k.ia[0]:]
	if _, sparse := ex.sparseOf(dA[:k.m*k.k]); sparse {
		return false
	}
	ldd := k.n
	if k.addRow {
		ldd = 0
	}
	return f64.GemmAddend(k.m, k.n, k.k, dA, b[k.ib[0]:], dout.F, din[2].F, ldd)
}

// jvpSetsFirst reports whether jvp may skip jvpSeed's zeroing of dout
// and have its dense product dA B set dout (Gemm with beta 0): there is
// no addend tangent, one product, and a dense dA. The products that are
// not one row or one column (not the one-dot-product-per-row kernel,
// whose beta 0 form does not turn a negative zero positive) give the
// same bits as with beta 1 on a zeroed dout: their kernels start from
// zero or from the zeroed dout alike.
func (k *matmulK) jvpSetsFirst(ex *exec, din []*Tensor) bool {
	if (k.add && din[2] != nil) || din[0] == nil || len(k.ia) != 1 || k.m < 2 || k.n < 2 || k.k < 1 {
		return false
	}
	_, sparse := ex.sparseOf(din[0].F[k.ia[0] : k.ia[0]+k.m*k.k])
	return !sparse
}
