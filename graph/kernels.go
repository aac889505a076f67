package graph

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// kernel is one primitive float operation of a Program. Kernels are built
// at compile time with every size and index they need, so forward does no
// checking. Derivative rules are added per kernel by the hvp work; the set
// of kernels is deliberately small: data movement (mapK, concatK),
// broadcasting arithmetic (binK), elementwise functions (unaryK), matrix
// products (matmulK) and softmax (softmaxK).
type kernel interface {
	// forward writes the result into out, whose shape and backing are
	// already allocated.
	forward(ex *exec, out *Tensor, in []*Tensor)
	// keepsInt reports whether the kernel maps Int inputs to an Int
	// result (data movement and integer arithmetic at compile time).
	keepsInt() bool
	// Derivative rules; see kernels_diff.go.
	jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor)
	vjp(ex *exec, gin, in []*Tensor, out, g *Tensor)
	vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor)
}

// mapK moves data: out[i] = in[idx[i]]. It implements Transpose, Slice,
// Gather, Expand and Split, all reduced to one index map at compile time.
type mapK struct{ idx []int32 }

func (k *mapK) keepsInt() bool { return true }

func (k *mapK) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		src := in[0].I
		for i, j := range k.idx {
			out.I[i] = src[j]
		}
		return
	}
	src, dst := in[0].F, out.F
	ex.parallelFor(len(dst), func(lo, hi int) {
		for i, j := range k.idx[lo:hi] {
			dst[lo+i] = src[j]
		}
	})
}

// concatK joins its inputs along one axis. outer is the product of the
// dimensions before the axis; chunk[k] is input k's extent along the axis
// times the product of the dimensions after it.
type concatK struct {
	outer int
	chunk []int
}

func (k *concatK) keepsInt() bool { return true }

func (k *concatK) forward(ex *exec, out *Tensor, in []*Tensor) {
	off := 0
	for o := 0; o < k.outer; o++ {
		for j, t := range in {
			c := k.chunk[j]
			if out.DType == Int {
				copy(out.I[off:off+c], t.I[o*c:(o+1)*c])
			} else {
				copy(out.F[off:off+c], t.F[o*c:(o+1)*c])
			}
			off += c
		}
	}
}

// binOp is an elementwise arithmetic operator.
type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
)

func (op binOp) String() string { return [...]string{"Add", "Sub", "Mul", "Div"}[op] }

// binK applies op elementwise with numpy broadcasting: ia and ib map each
// output element to an element of a and b (nil when that input already has
// the output's shape).
type binK struct {
	op     binOp
	ia, ib []int32
}

func (k *binK) keepsInt() bool { return true }

func (k *binK) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		a, b := in[0].I, in[1].I
		for i := range out.I {
			x, y := a[at(k.ia, i)], b[at(k.ib, i)]
			var r int64
			switch k.op {
			case opAdd:
				r = x + y
			case opSub:
				r = x - y
			case opMul:
				r = x * y
			case opDiv:
				if y != 0 {
					r = x / y
				}
			}
			out.I[i] = r
		}
		return
	}
	a, b, c := in[0].F, in[1].F, out.F
	ex.parallelFor(len(c), func(lo, hi int) { k.forwardRange(a, b, c, lo, hi) })
}

// forwardRange computes elements [lo, hi) of the float result.
func (k *binK) forwardRange(a, b, c []float64, lo, hi int) {
	if k.ia == nil && k.ib == nil {
		a, b, c = a[lo:hi], b[lo:hi], c[lo:hi]
		switch k.op {
		case opAdd:
			for i := range c {
				c[i] = a[i] + b[i]
			}
		case opSub:
			for i := range c {
				c[i] = a[i] - b[i]
			}
		case opMul:
			for i := range c {
				c[i] = a[i] * b[i]
			}
		case opDiv:
			for i := range c {
				c[i] = a[i] / b[i]
			}
		}
		return
	}
	switch k.op {
	case opAdd:
		for i := lo; i < hi; i++ {
			c[i] = a[at(k.ia, i)] + b[at(k.ib, i)]
		}
	case opSub:
		for i := lo; i < hi; i++ {
			c[i] = a[at(k.ia, i)] - b[at(k.ib, i)]
		}
	case opMul:
		for i := lo; i < hi; i++ {
			c[i] = a[at(k.ia, i)] * b[at(k.ib, i)]
		}
	case opDiv:
		for i := lo; i < hi; i++ {
			c[i] = a[at(k.ia, i)] / b[at(k.ib, i)]
		}
	}
}

// at maps output index i through an optional index map.
func at(idx []int32, i int) int {
	if idx == nil {
		return i
	}
	return int(idx[i])
}

// activation is a scalar function with its first and second derivatives,
// all as functions of the input x. When dy and ddy are set they give the
// same derivatives from the output y = f(x), which is much cheaper for
// tanh, sigmoid and exp (no exponential to recompute); the derivative
// rules then use them.
type activation struct {
	name     string
	f, d, dd func(x float64) float64
	dy, ddy  func(y float64) float64
}

// derivs returns functions of (x, y) for the first and second derivative.
func (a *activation) derivs() (d, dd func(x, y float64) float64) {
	if a.dy != nil {
		return func(_, y float64) float64 { return a.dy(y) }, func(_, y float64) float64 { return a.ddy(y) }
	}
	return func(x, _ float64) float64 { return a.d(x) }, func(x, _ float64) float64 { return a.dd(x) }
}

// unaryK applies an activation elementwise.
type unaryK struct{ a *activation }

func (k *unaryK) keepsInt() bool { return false }

func (k *unaryK) forward(ex *exec, out *Tensor, in []*Tensor) {
	f := k.a.f
	src, dst := in[0].F, out.F
	if k.a == actTanh {
		ex.parallelFor(len(dst), func(lo, hi int) { tanhTo(dst[lo:hi], src[lo:hi]) })
		return
	}
	ex.parallelFor(len(dst), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = f(src[i])
		}
	})
}

// matmulK is a batch of matrix products C[b] = A[ia[b]] B[ib[b]] with
// A[.] of size m×k and B[.] of size k×n, all row-major and contiguous.
// When add is set, a third input D broadcast to C's shape (through addIdx,
// nil when D has C's shape) is added: C = A B + D.
type matmulK struct {
	m, k, n int
	ia, ib  []int // offsets of each batch's A and B, in elements
	add     bool
	addIdx  []int32
	addRow  bool // the addend is one row of n values repeated for every row
}

func (k *matmulK) keepsInt() bool { return false }

func (k *matmulK) forward(ex *exec, out *Tensor, in []*Tensor) {
	a, b := in[0].F, in[1].F
	if k.add && len(k.ia) == 1 && (k.addIdx == nil || k.addRow) {
		ldd := k.n
		if k.addRow {
			ldd = 0
		}
		if gemmAddend(k.m, k.n, k.k, a[k.ia[0]:], b[k.ib[0]:], out.F, in[2].F, ldd) {
			return
		}
	}
	beta := 0.0
	if k.add {
		switch d := in[2].F; {
		case k.addIdx == nil:
			copy(out.F, d)
		case k.addRow:
			for o := 0; o < len(out.F); o += k.n {
				copy(out.F[o:o+k.n], d)
			}
		default:
			for i, j := range k.addIdx {
				out.F[i] = d[j]
			}
		}
		beta = 1
	}
	for bi := range k.ia {
		gemm(false, false, k.m, k.n, k.k, 1, a[k.ia[bi]:], b[k.ib[bi]:], beta, out.F[bi*k.m*k.n:])
	}
}

// gemm computes C = alpha op(A) op(B) + beta C for row-major contiguous
// matrices, where op(A) is m×k and op(B) is k×n. Skinny products (n at
// most 2, as in a one-output head, or k at most 2 without the AVX2
// kernel) use a direct loop. With AVX2 and FMA the rest run on the
// assembly kernel of gemm_amd64.s (op(A) read through strides, so a
// transposed A costs nothing; a transposed B is copied, B being the small
// operand in every product of the graph); otherwise on gonum's Dgemm.
func gemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if useAVX512 && n == 1 && k > 0 && alpha == 1 && (beta == 0 || beta == 1) {
		gemv512(transA, m, k, a, b, beta == 1, c)
		return
	}
	if useAVX512 && m == 1 && k > 0 && alpha == 1 && (beta == 0 || beta == 1) {
		// One row, c^T = op(B)^T a with a's k values contiguous either
		// way: a one-column product whose matrix is B as stored.
		gemv512(!transB, n, k, b, a, beta == 1, c)
		return
	}
	if useAVX2 && n <= 2 && m >= 4 && k > 0 && alpha == 1 {
		gemmPadded(transA, transB, m, n, k, a, b, beta, c)
		return
	}
	if k == 0 || n <= 2 || (k <= 2 && !(useAVX2 && m >= 4)) {
		gemmSmall(transA, transB, m, n, k, alpha, a, b, beta, c)
		return
	}
	if !useAVX2 || alpha != 1 || m < 4 || n < 4 {
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
	if useAVX512 && (beta == 0 || beta == 1) {
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
		gemmAVX2(m4, n4, k, a, aRow, aInner, b, ldb, c, ldc)
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
		gemmAVX512(m4, n, k, a, aRow, aInner, b, ldb, c, ldc, d, ldd, zero)
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

// gemmAddend sets C = D + A B for row-major A (m×k), B (k×n) and C, D as
// in gemmNN512, without first copying D into C; it reports false (doing
// nothing) when the AVX-512 kernel is not available for the shape.
func gemmAddend(m, n, k int, a, b []float64, c, d []float64, ldd int) bool {
	if !useAVX512 || n <= 2 || m < 4 {
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

// softmaxK computes softmax (or log-softmax) over the middle axis of a
// tensor viewed as [outer, n, inner].
type softmaxK struct {
	outer, n, inner int
	log             bool
}

func (k *softmaxK) keepsInt() bool { return false }

func (k *softmaxK) forward(ex *exec, out *Tensor, in []*Tensor) {
	x, y := in[0].F, out.F
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.inner; j++ {
			base := o*k.n*k.inner + j
			mx := math.Inf(-1)
			for i := 0; i < k.n; i++ {
				mx = math.Max(mx, x[base+i*k.inner])
			}
			sum := 0.0
			for i := 0; i < k.n; i++ {
				sum += math.Exp(x[base+i*k.inner] - mx)
			}
			if k.log {
				ls := math.Log(sum) + mx
				for i := 0; i < k.n; i++ {
					y[base+i*k.inner] = x[base+i*k.inner] - ls
				}
			} else {
				for i := 0; i < k.n; i++ {
					y[base+i*k.inner] = math.Exp(x[base+i*k.inner]-mx) / sum
				}
			}
		}
	}
}

func exp(x float64) float64 { return math.Exp(x) }
