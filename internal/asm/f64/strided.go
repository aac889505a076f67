package f64

// MatMulStrided sets C = A B on the calling goroutine for an m×k A whose
// rows start lda elements apart (A(i, p) = a[i*lda + p]: a block of
// columns of a wider row-major matrix, read in place), a row-major k×n B
// and an m×n C. Each element is the same sum, in the same order, as
// MatMul's of the same rows: a product over a panel of a wide matrix's
// columns equals MatMul's of the panel copied out.
func MatMulStrided(m, n, k int, a []float64, lda int, b, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	matMulRows(0, m, n, k, a, lda, 1, b, c)
}
