package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// MatMul sets C = op(A) op(B) for row-major matrices without padding, where
// op(A) is m×k (A stored k×m when transA) and op(B) is k×n (B stored n×k
// when transB); c has m×n elements. The rows of C are split over up to
// GOMAXPROCS goroutines for large products. It is the product kernel the
// graph runs on (AVX-512 or AVX2 and FMA where the processor has them),
// offered for the dense linear algebra of other packages: the exact
// solver's products over all right-hand sides. Factorisations stay in
// gonum's mat (internal/asm/f64 says why the kernels are not plugged into
// it).
func MatMul(transA, transB bool, m, n, k int, a, b, c []float64) {
	f64.MatMul(transA, transB, m, n, k, a, b, c)
}
