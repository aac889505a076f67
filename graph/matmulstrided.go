package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// GemmStrided sets C = A B, or C = C + A B when add, on the calling
// goroutine, for an m×k A, a k×n B and an m×n C whose rows start lda, ldb
// and ldc elements apart: blocks of wider row-major matrices, read and
// written where they lie, with MatMul's kernel and rounding. Each element
// is a sum over the k terms in order, from zero or (add) from C's value.
func GemmStrided(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, add bool) {
	f64.GemmStrided(m, n, k, a, lda, b, ldb, c, ldc, add)
}
