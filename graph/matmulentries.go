package graph

import "github.com/rnnaudit/rnnaudit/internal/asm/f64"

// MatMulEntries sets out[t] to entry (rows[t], col) of the product
// MatMul(false, false, m, n, k, a, b, c) forms, bit for bit, from A and
// the column col of B (bcol, k values): a few entries of a large product
// without forming it.
func MatMulEntries(m, n, k int, a []float64, rows []int32, col int, bcol, out []float64) {
	f64.MatMulEntries(m, n, k, a, rows, col, bcol, out)
}
