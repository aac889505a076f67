package hvp

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"
)

// eigenSym is mat.EigenSym's Factorize of the symmetric a (the
// eigenvalues w in ascending order and, with vectors, the eigenvectors as
// the columns of the row-major n×n v) that stops when ctx ends. It makes
// the calls LAPACK's Dsyev makes, with the same workspace, so that its
// numbers are the same: the reduction to tridiagonal form (Dsytrd), then
// Dorgtr and the implicit QL/QR iteration (Dsteqr), or for the values
// alone Dsterf; ctx is checked before each. None of the steps can be
// cut short, so a cancelled factorisation ends at the next step
// (interruptible returns at once and lets it run out that far). ok is
// false when the iteration did not converge.
func eigenSym(ctx context.Context, a mat.Symmetric, vectors bool) (w, v []float64, ok bool, err error) {
	n := a.SymmetricDim()
	sd := mat.NewSymDense(n, nil)
	sd.CopySym(a)
	raw := sd.RawSymmetric()
	impl := gonum.Implementation{}
	w = make([]float64, n)
	if n == 0 {
		return w, raw.Data, true, nil
	}
	if n == 1 {
		w[0] = raw.Data[0]
		if vectors {
			raw.Data[0] = 1
		}
		return w, raw.Data, true, nil
	}
	opts := "U"
	if raw.Uplo == blas.Lower {
		opts = "L"
	}
	nb := impl.Ilaenv(1, "DSYTRD", opts, n, -1, -1, -1)
	lwork := max(1, (nb+2)*n)
	work := make([]float64, lwork)
	// Dsyev scales a matrix whose largest entry is outside [rmin, rmax];
	// such a matrix is left to it (with no cancellation between steps).
	const safmin, eps = 0x1p-1022, 0x1p-52
	smlnum := safmin / eps
	rmin, rmax := math.Sqrt(smlnum), math.Sqrt(1/smlnum)
	if anrm := impl.Dlansy(lapack.MaxAbs, raw.Uplo, n, raw.Data, raw.Stride, work); (anrm > 0 && anrm < rmin) || anrm > rmax {
		var eig mat.EigenSym
		if !eig.Factorize(a, vectors) {
			return nil, nil, false, nil
		}
		w = eig.Values(nil)
		if vectors {
			var vecs mat.Dense
			eig.VectorsTo(&vecs)
			v = vecs.RawMatrix().Data
		}
		return w, v, true, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	const inde = 0
	indtau := inde + n
	indwork := indtau + n
	llwork := lwork - indwork
	impl.Dsytrd(raw.Uplo, n, raw.Data, raw.Stride, w, work[inde:], work[indtau:], work[indwork:], llwork)
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	if !vectors {
		return w, nil, impl.Dsterf(n, w, work[inde:]), nil
	}
	impl.Dorgtr(raw.Uplo, n, raw.Data, raw.Stride, work[indtau:], work[indwork:], llwork)
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	ok = impl.Dsteqr(lapack.EVComp(lapack.EVCompute), n, w, work[inde:], raw.Data, raw.Stride, work[indtau:])
	return w, raw.Data, ok, nil
}
