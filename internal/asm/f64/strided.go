package f64

// GemmStrided sets C = A B, or C = C + A B when add, for an m×k A, a
// k×n B and an m×n C whose rows start lda, ldb and ldc elements apart
// (blocks of wider row-major matrices, read and written where they lie),
// on the calling goroutine. Each element is a sum over p in order, from
// zero or, when add, continuing from C's value: a product over k terms
// split into two calls, the second adding, equals one call over all k.
func GemmStrided(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, add bool) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !add {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	switch {
	case use.avx512:
		var d []float64
		if add {
			d = c
		}
		gemmNN512(m, n, k, a, lda, 1, b, ldb, c, ldc, d, ldc)
	case use.avx2 && n >= 4:
		if !add {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		gemmNN(m, n, k, a, lda, 1, b, ldb, c, ldc)
	default:
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if !add {
				clear(row)
			}
			for p := 0; p < k; p++ {
				av := a[i*lda+p]
				for j, bv := range b[p*ldb : p*ldb+n] {
					row[j] += av * bv
				}
			}
		}
	}
}
