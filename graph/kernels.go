package graph

import (
	"math"

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
	forward(out *Tensor, in []*Tensor)
	// keepsInt reports whether the kernel maps Int inputs to an Int
	// result (data movement and integer arithmetic at compile time).
	keepsInt() bool
}

// mapK moves data: out[i] = in[idx[i]]. It implements Transpose, Slice,
// Gather, Expand and Split, all reduced to one index map at compile time.
type mapK struct{ idx []int32 }

func (k *mapK) keepsInt() bool { return true }

func (k *mapK) forward(out *Tensor, in []*Tensor) {
	if out.DType == Int {
		src := in[0].I
		for i, j := range k.idx {
			out.I[i] = src[j]
		}
		return
	}
	src := in[0].F
	dst := out.F
	for i, j := range k.idx {
		dst[i] = src[j]
	}
}

// concatK joins its inputs along one axis. outer is the product of the
// dimensions before the axis; chunk[k] is input k's extent along the axis
// times the product of the dimensions after it.
type concatK struct {
	outer int
	chunk []int
}

func (k *concatK) keepsInt() bool { return true }

func (k *concatK) forward(out *Tensor, in []*Tensor) {
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

func (k *binK) forward(out *Tensor, in []*Tensor) {
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
	if k.ia == nil && k.ib == nil {
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
		for i := range c {
			c[i] = a[at(k.ia, i)] + b[at(k.ib, i)]
		}
	case opSub:
		for i := range c {
			c[i] = a[at(k.ia, i)] - b[at(k.ib, i)]
		}
	case opMul:
		for i := range c {
			c[i] = a[at(k.ia, i)] * b[at(k.ib, i)]
		}
	case opDiv:
		for i := range c {
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
// all as functions of the input x.
type activation struct {
	name     string
	f, d, dd func(x float64) float64
}

// unaryK applies an activation elementwise.
type unaryK struct{ a *activation }

func (k *unaryK) keepsInt() bool { return false }

func (k *unaryK) forward(out *Tensor, in []*Tensor) {
	f := k.a.f
	src := in[0].F
	for i := range out.F {
		out.F[i] = f(src[i])
	}
}

// matmulK is a batch of matrix products C[b] = A[ia[b]] B[ib[b]] with
// A[.] of size m×k and B[.] of size k×n, all row-major and contiguous.
type matmulK struct {
	m, k, n int
	ia, ib  []int // offsets of each batch's A and B, in elements
}

func (k *matmulK) keepsInt() bool { return false }

func (k *matmulK) forward(out *Tensor, in []*Tensor) {
	a, b := in[0].F, in[1].F
	for bi := range k.ia {
		gemm(false, false, k.m, k.n, k.k, 1, a[k.ia[bi]:], b[k.ib[bi]:], 0, out.F[bi*k.m*k.n:])
	}
}

// gemm computes C = alpha op(A) op(B) + beta C for row-major contiguous
// matrices, where op(A) is m×k and op(B) is k×n.
func gemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range c[:m*n] {
			c[i] *= beta
		}
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	lda, ldb := k, n
	if transA {
		ta, lda = blas.Trans, m
	}
	if transB {
		tb, ldb = blas.Trans, k
	}
	blas64.Implementation().Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, n)
}

// softmaxK computes softmax (or log-softmax) over the middle axis of a
// tensor viewed as [outer, n, inner].
type softmaxK struct {
	outer, n, inner int
	log             bool
}

func (k *softmaxK) keepsInt() bool { return false }

func (k *softmaxK) forward(out *Tensor, in []*Tensor) {
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
