package graph

import "math"

// Reductions: one kernel (reduceK: sum, max or min over the middle axis of
// a tensor viewed as [outer, n, inner]) and lowerings that compose it with
// elementwise kernels (ReduceMean = sum times 1/n, ReduceL2 = sqrt of the
// sum of squares, ReduceLogSumExp = max + log sum exp(x - max), ...).
// Axes that are not adjacent in memory are first moved together by a
// transpose.
//
// ReduceMax and ReduceMin pass the derivative to the first element that
// attains the extreme (ties go to the lowest index).

type reduceOp uint8

const (
	reduceSum reduceOp = iota
	reduceMax
	reduceMin
)

// reduceK reduces the middle axis of its input viewed as [outer, n,
// inner], giving [outer, inner].
type reduceK struct {
	outer, n, inner int
	op              reduceOp
}

func (k *reduceK) keepsInt() bool { return true }

func (k *reduceK) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		x := in[0].I
		k.lanes(func(o, j, base int) {
			acc := x[base]
			for r := 1; r < k.n; r++ {
				v := x[base+r*k.inner]
				switch k.op {
				case reduceSum:
					acc += v
				case reduceMax:
					acc = max(acc, v)
				default:
					acc = min(acc, v)
				}
			}
			out.I[o*k.inner+j] = acc
		})
		return
	}
	x := in[0].F
	k.lanes(func(o, j, base int) {
		acc := x[base]
		for r := 1; r < k.n; r++ {
			v := x[base+r*k.inner]
			switch k.op {
			case reduceSum:
				acc += v
			case reduceMax:
				if v > acc || math.IsNaN(v) {
					acc = v
				}
			default:
				if v < acc || math.IsNaN(v) {
					acc = v
				}
			}
		}
		out.F[o*k.inner+j] = acc
	})
}

// lanes calls f for every output element (o, j) with the offset of its
// first input element; the lane's elements are inner apart.
func (k *reduceK) lanes(f func(o, j, base int)) {
	if k.n == 0 {
		return
	}
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.inner; j++ {
			f(o, j, o*k.n*k.inner+j)
		}
	}
}

// arg returns the offset of the input element a max or min lane takes:
// the first equal to the output, or -1 (a NaN lane).
func (k *reduceK) arg(x []float64, y float64, base int) int {
	for r := 0; r < k.n; r++ {
		if p := base + r*k.inner; x[p] == y {
			return p
		}
	}
	return -1
}

// jvp: sum: dy = sum of dx over the lane; max, min: dy = dx at the
// extreme.
func (k *reduceK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	clear(dout.F)
	if din[0] == nil {
		return
	}
	x, dx, y := in[0].F, din[0].F, out.F
	k.lanes(func(o, j, base int) {
		i := o*k.inner + j
		if k.op != reduceSum {
			if p := k.arg(x, y[i], base); p >= 0 {
				dout.F[i] = dx[p]
			}
			return
		}
		s := 0.0
		for r := 0; r < k.n; r++ {
			s += dx[base+r*k.inner]
		}
		dout.F[i] = s
	})
}

// vjp: sum: gx += g over the lane; max, min: gx at the extreme += g.
func (k *reduceK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	if gin[0] == nil {
		return
	}
	x, gx, y := in[0].F, gin[0].F, out.F
	k.lanes(func(o, j, base int) {
		i := o*k.inner + j
		if k.op != reduceSum {
			if p := k.arg(x, y[i], base); p >= 0 {
				gx[p] += g.F[i]
			}
			return
		}
		for r := 0; r < k.n; r++ {
			gx[base+r*k.inner] += g.F[i]
		}
	})
}

// vjpTangent: the kernel is linear (sum) or piecewise linear (max, min),
// so the second-order term vanishes.
func (k *reduceK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
}

func (k *reduceK) exampleIDs(out []float64, in []*Tensor) {
	x := in[0].F
	k.lanes(func(o, j, base int) {
		v := float64(idNone)
		for r := 0; r < k.n; r++ {
			v = combineID(v, x[base+r*k.inner])
		}
		out[o*k.inner+j] = v
	})
}

// reduce reduces v over the axes marked in red, keeping them as size 1.
func (c *compiler) reduce(v *value, red []bool, op reduceOp) *value {
	d := v.dims()
	kept := make([]int, len(d))
	lo, hi := -1, -1 // the first and last reduced axis longer than 1
	for a, n := range d {
		kept[a] = n
		if red[a] {
			kept[a] = 1
			if n != 1 {
				if lo < 0 {
					lo = a
				}
				hi = a
			}
		}
	}
	if lo < 0 {
		return c.view(v, kept)
	}
	adjacent := true
	for a := lo; a <= hi; a++ {
		adjacent = adjacent && (red[a] || d[a] == 1)
	}
	if !adjacent {
		var perm []int
		for a := range d {
			if !red[a] {
				perm = append(perm, a)
			}
		}
		for a := range d {
			if red[a] {
				perm = append(perm, a)
			}
		}
		t := c.transpose(v, perm)
		k := &reduceK{outer: numel(kept), n: numel(d) / max(numel(kept), 1), inner: 1, op: op}
		if numel(d) == 0 {
			k.n = 0
		}
		return c.emit(k, kept, t)
	}
	k := &reduceK{outer: numel(d[:lo]), n: numel(d[lo : hi+1]), inner: numel(d[hi+1:]), op: op}
	return c.emit(k, kept, v)
}

// reduceArgs reads the axes (an attribute, or from opset axesInput on the
// optional second input), keepdims and noop_with_empty_axes of a Reduce
// operator. It returns the axes to reduce, or nil for none at all (no
// axes with noop_with_empty_axes set).
func reduceArgs(c *compiler, n *Node, in []*value, axesInput int) (red []bool, keep bool, err error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, false, err
	}
	var axes []int64
	if c.g.Opset < axesInput {
		axes, _, err = n.attrInts("axes")
	} else if len(in) > 1 && in[1] != nil {
		axes, err = staticInts(in[1], "axes")
	}
	if err != nil {
		return nil, false, err
	}
	k, err := n.attrInt("keepdims", 1)
	if err != nil {
		return nil, false, err
	}
	noop, err := n.attrInt("noop_with_empty_axes", 0)
	if err != nil {
		return nil, false, err
	}
	if len(axes) == 0 && noop != 0 {
		return nil, k != 0, nil
	}
	r := len(x.dims())
	red = make([]bool, r)
	for _, a := range axes {
		ax, err := normAxis(a, r)
		if err != nil {
			return nil, false, err
		}
		red[ax] = true
	}
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	return red, k != 0, nil
}

// dropReduced removes the reduced axes of a keepdims result.
func (c *compiler) dropReduced(v *value, red []bool) *value {
	var shape []int
	for a, n := range v.dims() {
		if !red[a] {
			shape = append(shape, n)
		}
	}
	return c.view(v, shape)
}

// reduceCount is the number of elements each output of a reduction over
// red takes.
func reduceCount(d []int, red []bool) int {
	n := 1
	for a, k := range d {
		if red[a] {
			n *= k
		}
	}
	return n
}

// lowerReduce lowers a Reduce operator: pre applies an elementwise
// function before the reduction, post after (taking the input and the
// reduced keepdims value); either may be nil.
func lowerReduce(op reduceOp, axesInput int, pre func(c *compiler, x *value) *value,
	post func(c *compiler, x, r *value, red []bool) *value) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		red, keep, err := reduceArgs(c, n, in, axesInput)
		if err != nil {
			return nil, err
		}
		x := in[0]
		if red == nil {
			return []*value{x}, nil
		}
		y := x
		if pre != nil {
			y = pre(c, x)
		}
		y = c.reduce(y, red, op)
		if post != nil {
			y = post(c, x, y, red)
		}
		if !keep {
			y = c.dropReduced(y, red)
		}
		return []*value{y}, nil
	}
}

func square(c *compiler, x *value) *value { return c.mustBinary(opMul, x, x) }

func lowerReduceMean(c *compiler, x, r *value, red []bool) *value {
	return c.mustBinary(opMul, r, c.scalar(1/float64(reduceCount(x.dims(), red))))
}

// lowerReduceLogSumExp: m + log(sum(exp(x - m))) with m the maximum, so
// that large values do not overflow. The derivative through m cancels.
func lowerReduceLogSumExp(c *compiler, n *Node, in []*value) ([]*value, error) {
	red, keep, err := reduceArgs(c, n, in, 18)
	if err != nil {
		return nil, err
	}
	x := in[0]
	if red == nil {
		return []*value{x}, nil
	}
	m := c.reduce(x, red, reduceMax)
	s := c.reduce(c.unary(actExp, c.mustBinary(opSub, x, m)), red, reduceSum)
	y := c.mustBinary(opAdd, m, c.unary(actLog, s))
	if !keep {
		y = c.dropReduced(y, red)
	}
	return []*value{y}, nil
}
