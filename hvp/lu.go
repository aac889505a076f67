package hvp

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/gonum"

	"github.com/rnnaudit/rnnaudit/graph"
)

// This file: the LU factorisation and inverse of a dense square matrix
// (the exact solver's indefinite damped curvature), as LAPACK's blocked
// Dgetrf and Dgetri compute them (gonum's code, step for step) except
// that their matrix products, most of their arithmetic, run on graph's
// kernel instead of gonum's Dgemm: at P = 481, about three times as fast.
// Same algorithm, different rounding.

// luFactor is Dgetrf for the n×n row-major a: a = P L U in place, the
// row interchanges in ipiv. ok is false when U is exactly singular.
func luFactor(n int, a []float64, ipiv []int) (ok bool) {
	impl := gonum.Implementation{}
	nb := impl.Ilaenv(1, "DGETRF", " ", n, n, -1, -1)
	if nb <= 1 || n <= nb {
		return impl.Dgetf2(n, n, a, n, ipiv)
	}
	bi := blas64.Implementation()
	neg := make([]float64, n*nb) // minus the panel's L, (n-j-jb)×jb
	ok = true
	for j := 0; j < n; j += nb {
		jb := min(n-j, nb)
		if !impl.Dgetf2(n-j, jb, a[j*n+j:], n, ipiv[j:j+jb]) {
			ok = false
		}
		for i := j; i < j+jb; i++ {
			ipiv[i] += j
		}
		impl.Dlaswp(j, a, n, j, j+jb-1, ipiv[:j+jb], 1)
		if j+jb < n {
			impl.Dlaswp(n-j-jb, a[j+jb:], n, j, j+jb-1, ipiv[:j+jb], 1)
			bi.Dtrsm(blas.Left, blas.Lower, blas.NoTrans, blas.Unit, jb, n-j-jb, 1, a[j*n+j:], n, a[j*n+j+jb:], n)
			// A22 -= L21 U12.
			m := n - j - jb
			for r := 0; r < m; r++ {
				for c := 0; c < jb; c++ {
					neg[r*jb+c] = -a[(j+jb+r)*n+j+c]
				}
			}
			graph.GemmStrided(m, m, jb, neg, jb, a[j*n+j+jb:], n, a[(j+jb)*n+j+jb:], n, true)
		}
	}
	return ok
}

// luInverse is Dgetri: it overwrites luFactor's result a (n×n) and ipiv
// with the inverse of the matrix factorised. ok is false when U is
// exactly singular.
func luInverse(n int, a []float64, ipiv []int) (ok bool) {
	impl := gonum.Implementation{}
	if !impl.Dtrtri(blas.Upper, blas.NonUnit, n, a, n) {
		return false
	}
	bi := blas64.Implementation()
	nb := impl.Ilaenv(1, "DGETRI", " ", n, -1, -1, -1)
	if nb < 2 || n <= nb {
		work := make([]float64, n)
		for j := n - 1; j >= 0; j-- {
			for i := j + 1; i < n; i++ {
				work[i] = a[i*n+j]
				a[i*n+j] = 0
			}
			if j < n-1 {
				bi.Dgemv(blas.NoTrans, n, n-j-1, -1, a[j+1:], n, work[j+1:], 1, 1, a[j:], n)
			}
		}
	} else {
		// Solve inv(A) L = inv(U) for inv(A), a block of nb columns at a
		// time from the last; work holds L's columns of the block.
		work, neg := make([]float64, n*nb), make([]float64, n*nb)
		for j := ((n - 1) / nb) * nb; j >= 0; j -= nb {
			jb := min(nb, n-j)
			for jj := j; jj < j+jb; jj++ {
				for i := jj + 1; i < n; i++ {
					work[i*nb+jj-j] = a[i*n+jj]
					a[i*n+jj] = 0
				}
			}
			if j+jb < n {
				for i := j + jb; i < n; i++ {
					for c := 0; c < jb; c++ {
						neg[(i-j-jb)*jb+c] = -work[i*nb+c]
					}
				}
				graph.GemmStrided(n, jb, n-j-jb, a[j+jb:], n, neg, jb, a[j:], n, true)
			}
			bi.Dtrsm(blas.Right, blas.Lower, blas.NoTrans, blas.Unit, n, jb, 1, work[j*nb:], nb, a[j:], n)
		}
	}
	for j := n - 2; j >= 0; j-- {
		if jp := ipiv[j]; jp != j {
			bi.Dswap(n, a[j:], n, a[jp:], n)
		}
	}
	return true
}
