package graph

import (
	"runtime"
	"sync"
)

// MatMul sets C = op(A) op(B) for row-major matrices without padding, where
// op(A) is m×k (A stored k×m when transA) and op(B) is k×n (B stored n×k
// when transB); c has m×n elements. The rows of C are split over up to
// GOMAXPROCS goroutines for large products. It is the product kernel the
// graph runs on (AVX-512 or AVX2 and FMA where the processor has them),
// offered for the dense linear algebra of other packages: the exact
// solver's products over all right-hand sides.
func MatMul(transA, transB bool, m, n, k int, a, b, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	if transB {
		bt := make([]float64, k*n)
		transposeTo(bt, b, n, k)
		b = bt
	}
	aRow, aInner := k, 1
	if transA {
		aRow, aInner = 1, m
	}
	// Row blocks of a multiple of 4 rows, one per goroutine.
	w := 1
	if m*n*k >= 1<<20 {
		w = min(runtime.GOMAXPROCS(0), (m+3)/4)
	}
	per := ((m+3)/4 + w - 1) / w * 4
	var wg sync.WaitGroup
	for r0 := 0; r0 < m; r0 += per {
		wg.Add(1)
		go func(r0, r1 int) {
			defer wg.Done()
			matMulRows(r0, r1, n, k, a, aRow, aInner, b, c)
		}(r0, min(m, r0+per))
	}
	wg.Wait()
}

// matMulRows computes rows [r0, r1) of MatMul's product.
func matMulRows(r0, r1, n, k int, a []float64, aRow, aInner int, b, c []float64) {
	rows := r1 - r0
	sa, sc := a[r0*aRow:], c[r0*n:]
	switch {
	case useAVX512:
		gemmNN512(rows, n, k, sa, aRow, aInner, b, n, sc, n, nil, 0)
	case useAVX2 && n >= 4:
		clear(sc[:rows*n])
		gemmNN(rows, n, k, sa, aRow, aInner, b, n, sc, n)
	default:
		for i := 0; i < rows; i++ {
			row := sc[i*n : (i+1)*n]
			clear(row)
			for p := 0; p < k; p++ {
				av := sa[i*aRow+p*aInner]
				for j, bv := range b[p*n : (p+1)*n] {
					row[j] += av * bv
				}
			}
		}
	}
}
