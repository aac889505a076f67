package hvp

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
)

// This file: the eigenvalues alone of a dense symmetric matrix, faster.

// eigenvalues returns the eigenvalues of the symmetric n×n a (row-major,
// both triangles; overwritten) in ascending order, as eigenSym(ctx, a,
// false) computes them, up to rounding: LAPACK's blocked reduction to
// tridiagonal form (Dsytrd with the upper triangle) and Dsterf, except
// that the rank-2k update of the trailing matrix after each panel, half
// the reduction's arithmetic, is done as two matrix products on graph's
// kernel over the whole trailing square instead of gonum's Dsyr2k over
// its upper triangle: twice the arithmetic at many times the speed (the
// exact solver's 481×481 paper-scale Hessian: 44 ms to about 20). ok is
// false when the iteration did not converge. A matrix whose largest
// entry Dsyev would scale is left to eigenSym.
func eigenvalues(ctx context.Context, a []float64, n int) (w []float64, ok bool, err error) {
	if n < 2 {
		w, _, ok, err = eigenSym(ctx, mat.NewSymDense(n, a), false)
		return w, ok, err
	}
	impl := gonum.Implementation{}
	const safmin, eps = 0x1p-1022, 0x1p-52
	smlnum := safmin / eps
	rmin, rmax := math.Sqrt(smlnum), math.Sqrt(1/smlnum)
	if anrm := impl.Dlansy(lapack.MaxAbs, blas.Upper, n, a, n, nil); (anrm > 0 && anrm < rmin) || anrm > rmax {
		w, _, ok, err = eigenSym(ctx, mat.NewSymDense(n, a), false)
		return w, ok, err
	}
	nb := impl.Ilaenv(1, "DSYTRD", "U", n, -1, -1, -1)
	nx := n
	if 1 < nb && nb < n {
		nx = min(n, max(nb, impl.Ilaenv(3, "DSYTRD", "U", n, -1, -1, -1)))
	} else {
		nb = 1
	}
	w = make([]float64, n)
	e, tau := make([]float64, n), make([]float64, n)
	work := make([]float64, n*nb) // the panel's W, n×nb
	vt, wt := make([]float64, nb*n), make([]float64, nb*n)
	xs := make([]float64, 8*n)
	kk := n - ((n-nx+nb-1)/nb)*nb
	for i := n - nb; i >= kk; i -= nb {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		// Reduce the last nb rows and columns of the leading (i+nb)×(i+nb)
		// block: its Householder vectors V in columns i..i+nb-1 of rows
		// 0..i-1, and W such that the update is A -= V W^T + W V^T.
		latrd(i+nb, nb, a, n, e, tau, work, xs)
		for r := 0; r < i; r++ {
			for c := 0; c < nb; c++ {
				vt[c*i+r] = -a[r*n+i+c]
				wt[c*i+r] = -work[r*nb+c]
			}
		}
		graph.GemmStrided(i, i, nb, a[i:], n, wt, i, a, n, true) // A += V (-W^T)
		graph.GemmStrided(i, i, nb, work, nb, vt, i, a, n, true) // A += W (-V^T)
		for j := i; j < i+nb; j++ {
			a[(j-1)*n+j] = e[j-1]
			w[j] = a[j*n+j]
		}
	}
	impl.Dsytd2(blas.Upper, kk, a, n, w, e, tau)
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	return w, impl.Dsterf(n, w, e), nil
}

// latrd is gonum's Dlatrd for the upper triangle (reduce the last nb rows
// and columns of the leading n×n block of a, stride lda, to tridiagonal
// form, returning W in w, n×nb), with its symmetric matrix-vector product
// y = A x over the unreduced block, the greater part of its arithmetic,
// done as the row vector x^T A on graph's kernel: that block (untouched
// within a panel) holds both triangles, as eigenvalues keeps them. xs is
// scratch of 8n.
func latrd(n, nb int, a []float64, lda int, e, tau, w, xs []float64) {
	bi := blas64.Implementation()
	impl := gonum.Implementation{}
	ldw := nb
	for i := n - 1; i >= n-nb; i-- {
		iw := i - n + nb
		if i < n-1 {
			bi.Dgemv(blas.NoTrans, i+1, n-i-1, -1, a[i+1:], lda, w[i*ldw+iw+1:], 1, 1, a[i:], lda)
			bi.Dgemv(blas.NoTrans, i+1, n-i-1, -1, w[iw+1:], ldw, a[i*lda+i+1:], 1, 1, a[i:], lda)
		}
		if i == 0 {
			continue
		}
		e[i-1], tau[i-1] = impl.Dlarfg(i, a[(i-1)*lda+i], a[i:], lda)
		a[(i-1)*lda+i] = 1
		// w[:, iw] = A[0:i, 0:i] a[0:i, i] (Dsymv), as the first of four
		// rows x^T A whose other three are zero: the kernel takes rows
		// four at a time.
		x, y := xs[:4*i], xs[4*n:4*n+4*i]
		clear(x[i:])
		for r := range i {
			x[r] = a[r*lda+i]
		}
		graph.GemmStrided(4, i, i, x, i, a, lda, y, i, false)
		for r, v := range y[:i] {
			w[r*ldw+iw] = v
		}
		if i < n-1 {
			bi.Dgemv(blas.Trans, i, n-i-1, 1, w[iw+1:], ldw, a[i:], lda, 0, w[(i+1)*ldw+iw:], ldw)
			bi.Dgemv(blas.NoTrans, i, n-i-1, -1, a[i+1:], lda, w[(i+1)*ldw+iw:], ldw, 1, w[iw:], ldw)
			bi.Dgemv(blas.Trans, i, n-i-1, 1, a[i+1:], lda, a[i:], lda, 0, w[(i+1)*ldw+iw:], ldw)
			bi.Dgemv(blas.NoTrans, i, n-i-1, -1, w[iw+1:], ldw, w[(i+1)*ldw+iw:], ldw, 1, w[iw:], ldw)
		}
		bi.Dscal(i, tau[i-1], w[iw:], ldw)
		alpha := -0.5 * tau[i-1] * bi.Ddot(i, w[iw:], ldw, a[i:], lda)
		bi.Daxpy(i, alpha, a[i:], lda, w[iw:], ldw)
	}
}
