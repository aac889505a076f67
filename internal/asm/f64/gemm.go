package f64

import (
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/rnnaudit/rnnaudit/internal/par"
)

// Gemm computes C = alpha op(A) op(B) + beta C for row-major contiguous
// matrices, where op(A) is m×k and op(B) is k×n. Skinny products (n at
// most 2, as in a one-output head, or k at most 2 without the AVX2
// kernel) use a direct loop. With AVX2 and FMA the rest run on the
// assembly kernel of gemm_amd64.s (op(A) read through strides, so a
// transposed A costs nothing; a transposed B is copied, B being the small
// operand in every product of the graph); otherwise on gonum's Dgemm.
func Gemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if use.avx512 && n == 1 && k > 0 && alpha == 1 && (beta == 0 || beta == 1) {
		gemv512(transA, m, k, a, b, beta == 1, c)
		return
	}
	if use.avx512 && m == 1 && k > 0 && alpha == 1 && (beta == 0 || beta == 1) {
		// One row, c^T = op(B)^T a with a's k values contiguous either
		// way: a one-column product whose matrix is B as stored.
		gemv512(!transB, n, k, b, a, beta == 1, c)
		return
	}
	if use.avx2 && n <= 2 && m >= 4 && k > 0 && alpha == 1 {
		gemmPadded(transA, transB, m, n, k, a, b, beta, c)
		return
	}
	if k == 0 || n <= 2 || (k <= 2 && !(use.avx2 && m >= 4)) {
		gemmSmall(transA, transB, m, n, k, alpha, a, b, beta, c)
		return
	}
	if !use.avx2 || alpha != 1 || m < 4 || n < 4 {
		ta, tb := blas.NoTrans, blas.NoTrans
		lda, ldb := k, n
		if transA {
			ta, lda = blas.Trans, m
		}
		if transB {
			tb, ldb = blas.Trans, k
		}
		blas64.Implementation().Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, n)
		return
	}
	aRow, aInner := k, 1
	if transA {
		aRow, aInner = 1, m
	}
	if transB {
		bt, buf := scratch(k * n)
		transposeTo(bt, b, n, k)
		defer scratchPool.Put(buf)
		b = bt
	}
	if use.avx512 && (beta == 0 || beta == 1) {
		d := c // C = C + A B
		if beta == 0 {
			d = nil
		}
		gemmNN512(m, n, k, a, aRow, aInner, b, n, c, n, d, n)
		return
	}
	switch beta {
	case 0:
		clear(c[:m*n])
	case 1:
	default:
		for i := range c[:m*n] {
			c[i] *= beta
		}
	}
	gemmNN(m, n, k, a, aRow, aInner, b, n, c, n)
}

// GemmTransposed is Gemm(false, true, m, n, k, alpha, a, b, beta, c)
// for a caller that keeps bt, the k×n transpose of b (stored n×k), from
// call to call: where Gemm would copy b transposed (the AVX kernels'
// shapes) it reads bt instead, the same product; elsewhere it is that
// Gemm call.
func GemmTransposed(m, n, k int, alpha float64, a, b, bt []float64, beta float64, c []float64) {
	if use.avx2 && alpha == 1 && m >= 4 && n >= 4 && k > 0 {
		Gemm(false, false, m, n, k, alpha, a, bt, beta, c)
		return
	}
	Gemm(false, true, m, n, k, alpha, a, b, beta, c)
}

// TransposeTo sets dst (cols×rows) to the transpose of the row-major
// rows×cols matrix src, as Gemm transposes B.
func TransposeTo(dst, src []float64, rows, cols int) { transposeTo(dst, src, rows, cols) }

// transposeTo sets dst (cols×rows) to the transpose of the row-major
// rows×cols matrix src.
func transposeTo(dst, src []float64, rows, cols int) {
	for i := 0; i < rows; i++ {
		for j, v := range src[i*cols : (i+1)*cols] {
			dst[j*rows+i] = v
		}
	}
}

var scratchPool = sync.Pool{New: func() any { return new([]float64) }}

// scratch returns a pooled buffer of n elements (contents undefined) and
// the handle to put back.
func scratch(n int) ([]float64, *[]float64) {
	buf := scratchPool.Get().(*[]float64)
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	return (*buf)[:n], buf
}

// gemmPadded runs a product with one or two output columns on the AVX2
// kernel by padding op(B) and C to four columns: four times the
// arithmetic at many times the speed of the scalar loop.
func gemmPadded(transA, transB bool, m, n, k int, a, b []float64, beta float64, c []float64) {
	bp, hb := scratch(k * 4)
	cp, hc := scratch(m * 4)
	clear(bp)
	for p := 0; p < k; p++ {
		for j := 0; j < n; j++ {
			if transB {
				bp[p*4+j] = b[j*k+p]
			} else {
				bp[p*4+j] = b[p*n+j]
			}
		}
	}
	clear(cp)
	if beta != 0 {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				cp[i*4+j] = beta * c[i*n+j]
			}
		}
	}
	aRow, aInner := k, 1
	if transA {
		aRow, aInner = 1, m
	}
	gemmNN(m, 4, k, a, aRow, aInner, bp, 4, cp, 4)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			c[i*n+j] = cp[i*4+j]
		}
	}
	scratchPool.Put(hb)
	scratchPool.Put(hc)
}

// kernelWork bounds the multiply-adds of one call of an assembly
// kernel. A goroutine cannot be preempted inside assembly, and a pending
// stop-the-world (every garbage collection starts with one) waits for it:
// one call forming a 10,000×10,000 product over 17,000 terms stalled the
// whole program, its progress lines and Ctrl-C included, for minutes.
// 1<<25 multiply-adds take a few milliseconds.
const kernelWork = 1 << 25

// yieldBetween lets the scheduler run between two kernel calls when more
// follow: the kernels are NOSPLIT assembly and the loop calling them has
// no other preemption point, so a stop-the-world request would otherwise
// wait until the whole product is done.
func yieldBetween(more bool) {
	if more {
		runtime.Gosched()
	}
}

// kernelRows is the number of rows, a multiple of four, that one kernel
// call of an n-column product over k terms takes within kernelWork.
func kernelRows(n, k int) int {
	return max(4, kernelWork/max(1, n*k)) &^ 3
}

// gemmNN adds A B to C, with A(i, p) = a[i*aRow + p*aInner] and B, C
// row-major. The 4×4-aligned block runs on the AVX2 kernel, the edges in
// Go.
func gemmNN(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int) {
	m4, n4 := m&^3, n&^3
	if m4 > 0 && n4 > 0 {
		// The kernel does not check bounds; these do.
		_ = a[(m4-1)*aRow+(k-1)*aInner]
		_ = b[(k-1)*ldb+n4-1]
		_ = c[(m4-1)*ldc+n4-1]
		rb := kernelRows(n4, k)
		for r := 0; r < m4; r += rb {
			h := min(rb, m4-r)
			gemmAVX2(h, n4, k, a[r*aRow:], aRow, aInner, b, ldb, c[r*ldc:], ldc)
			yieldBetween(r+h < m4)
		}
	}
	for i := 0; i < m; i++ {
		j0 := n4
		if i >= m4 {
			j0 = 0
		}
		if j0 == n {
			continue
		}
		row := c[i*ldc+j0 : i*ldc+n]
		for p := 0; p < k; p++ {
			av := a[i*aRow+p*aInner]
			bp := b[p*ldb+j0 : p*ldb+n]
			for j, bv := range bp {
				row[j] += av * bv
			}
		}
	}
}

// gemv512 sets c (+)= op(A) b for a one-column b (k values) on the
// AVX-512 kernels: a dot product per row of A, or, for a transposed A,
// the one-row product b^T A.
func gemv512(transA bool, m, k int, a, b []float64, acc bool, c []float64) {
	_, _, _ = a[m*k-1], b[k-1], c[m-1]
	ac := 0
	if acc {
		ac = 1
	}
	if transA {
		rowGemm512(m, k, b, a, m, c, ac)
	} else {
		dotRows512(m, k, a, k, b, c, ac)
	}
}

// gemmNN512 sets C = D + A B, with A(i, p) = a[i*aRow + p*aInner], B and
// C row-major and D(i, j) = d[i*ldd + j] (ldd 0 repeats one row; d may
// be c; nil d means zero). Blocks of four rows run on the AVX-512 kernel,
// the last rows in Go.
func gemmNN512(m, n, k int, a []float64, aRow, aInner int, b []float64, ldb int, c []float64, ldc int, d []float64, ldd int) {
	m4 := m &^ 3
	zero := 0
	if d == nil {
		zero = 1
	}
	if m4 > 0 && n > 0 {
		// The kernel does not check bounds; these do.
		if k > 0 {
			_ = a[(m4-1)*aRow+(k-1)*aInner]
			_ = b[(k-1)*ldb+n-1]
		}
		_ = c[(m4-1)*ldc+n-1]
		if d != nil {
			_ = d[(m4-1)*ldd+n-1]
		}
		rb := kernelRows(n, k)
		for r := 0; r < m4; r += rb {
			h := min(rb, m4-r)
			dr := d
			if d != nil {
				dr = d[r*ldd:]
			}
			gemmAVX512(h, n, k, a[r*aRow:], aRow, aInner, b, ldb, c[r*ldc:], ldc, dr, ldd, zero)
			yieldBetween(r+h < m4)
		}
	}
	for i := m4; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if d == nil {
			clear(row)
		} else {
			copy(row, d[i*ldd:i*ldd+n])
		}
		for p := 0; p < k; p++ {
			av := a[i*aRow+p*aInner]
			for j, bv := range b[p*ldb : p*ldb+n] {
				row[j] += av * bv
			}
		}
	}
}

// GemmAddend sets C = D + A B for row-major A (m×k), B (k×n) and C, D as
// in gemmNN512, without first copying D into C; it reports false (doing
// nothing) when the AVX-512 kernel is not available for the shape.
func GemmAddend(m, n, k int, a, b []float64, c, d []float64, ldd int) bool {
	if !use.avx512 || n <= 2 || m < 4 {
		return false
	}
	gemmNN512(m, n, k, a, k, 1, b, n, c, n, d, ldd)
	return true
}

// gemmSmall is gemm by direct loops, for skinny shapes.
func gemmSmall(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	// Strides of op(A)(i, p) and op(B)(p, j).
	ai, ap := k, 1
	if transA {
		ai, ap = 1, m
	}
	bp, bj := n, 1
	if transB {
		bp, bj = 1, k
	}
	if n == 1 && transA {
		// c += A^T b with A stored k×m: an axpy per row of A.
		if beta == 0 {
			clear(c[:m])
		} else if beta != 1 {
			for i := range c[:m] {
				c[i] *= beta
			}
		}
		for p := 0; p < k; p++ {
			bv := alpha * b[p]
			if bv == 0 {
				continue
			}
			for i, av := range a[p*m : p*m+m] {
				c[i] += av * bv
			}
		}
		return
	}
	if n == 1 && !transA && bp == 1 {
		// Matrix times vector: one dot product per row.
		b = b[:k]
		for i := 0; i < m; i++ {
			row := a[i*k : i*k+k]
			s := 0.0
			for p, v := range row {
				s += v * b[p]
			}
			if beta == 0 {
				c[i] = alpha * s
			} else {
				c[i] = beta*c[i] + alpha*s
			}
		}
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*n : i*n+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
		for p := 0; p < k; p++ {
			av := alpha * a[i*ai+p*ap]
			if av == 0 {
				continue
			}
			bo := p * bp
			for j := range row {
				row[j] += av * b[bo+j*bj]
			}
		}
	}
}

// MatMul sets C = op(A) op(B) for row-major matrices without padding, where
// op(A) is m×k (A stored k×m when transA) and op(B) is k×n (B stored n×k
// when transB); c has m×n elements. The rows of C are split over up to
// GOMAXPROCS goroutines for large products.
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
	// Ranges of blocks of 4 rows, one per goroutine.
	w := 1
	if m*n*k >= 1<<20 {
		w = min(runtime.GOMAXPROCS(0), (m+3)/4)
	}
	par.Ranges((m+3)/4, w, func(lo, hi int) {
		matMulRows(4*lo, min(m, 4*hi), n, k, a, aRow, aInner, b, c)
	})
}

// matMulRows computes rows [r0, r1) of MatMul's product.
func matMulRows(r0, r1, n, k int, a []float64, aRow, aInner int, b, c []float64) {
	rows := r1 - r0
	sa, sc := a[r0*aRow:], c[r0*n:]
	switch {
	case use.avx512:
		gemmNN512(rows, n, k, sa, aRow, aInner, b, n, sc, n, nil, 0)
	case use.avx2 && n >= 4:
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
