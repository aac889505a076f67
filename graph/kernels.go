package graph

import (
	"math"

	"github.com/rnnaudit/rnnaudit/internal/asm/f64"
)

// kernel is one primitive float operation of a Program. Kernels are built
// at compile time with every size and index they need, so forward does no
// checking. Derivative rules are added per kernel by the hvp work; the set
// of kernels is deliberately small: data movement (mapK, concatK),
// broadcasting arithmetic (binK), elementwise functions (unaryK, with its
// rules in activations.go), matrix products (matmulK) and softmax (softmaxK).
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
	if ex.inline(len(dst)) {
		k.gather(dst, src, 0, len(dst)) // no closure: an allocation per call
		return
	}
	ex.parallelFor(len(dst), func(lo, hi int) { k.gather(dst, src, lo, hi) })
}

// gather sets dst[i] = src[idx[i]] for lo <= i < hi.
func (k *mapK) gather(dst, src []float64, lo, hi int) {
	for i, j := range k.idx[lo:hi] {
		dst[lo+i] = src[j]
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
	if ex.inline(len(c)) {
		k.forwardRange(a, b, c, 0, len(c)) // no closure: an allocation per call
		return
	}
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
	if k.scalarRange(a, b, c, lo, hi) {
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
		if f64.GemmAddend(k.m, k.n, k.k, a[k.ia[0]:], b[k.ib[0]:], out.F, in[2].F, ldd) {
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
		f64.Gemm(false, false, k.m, k.n, k.k, 1, a[k.ia[bi]:], b[k.ib[bi]:], beta, out.F[bi*k.m*k.n:])
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
