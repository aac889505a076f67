package hvp

import "gonum.org/v1/gonum/mat"

// TridiagonalEigen eigendecomposes the symmetric tridiagonal n×n matrix
// with diagonal alpha (n = len(alpha)) and off-diagonal beta (beta[j]
// joins rows j and j+1; only beta[:n-1] is read): the matrix T_k of the
// Lanczos process, from which LowRank reads its basis and the Newton
// step of a large block (package audit) its Ritz values and Galerkin
// solve. It returns the eigenvalues in ascending order and the
// eigenvectors as the columns of vecs; ok is false when the iteration
// did not converge.
func TridiagonalEigen(alpha, beta []float64) (vals []float64, vecs *mat.Dense, ok bool) {
	n := len(alpha)
	t := mat.NewSymDense(n, nil)
	for j := 0; j < n; j++ {
		t.SetSym(j, j, alpha[j])
		if j+1 < n {
			t.SetSym(j, j+1, beta[j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(t, true) {
		return nil, nil, false
	}
	vecs = new(mat.Dense)
	eig.VectorsTo(vecs)
	return eig.Values(nil), vecs, true
}
