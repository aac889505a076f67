package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// MatMulStrided sets C = A B, on the calling goroutine, for an m×k A
// whose rows start lda elements apart (A(i, p) = a[i*lda + p]: a panel of
// columns of a wider row-major matrix, read where it lies), a row-major
// k×n B and an m×n C, with MatMul's kernel and rounding.
func MatMulStrided(m, n, k int, a []float64, lda int, b, c []float64) {
	f64.MatMulStrided(m, n, k, a, lda, b, c)
}
