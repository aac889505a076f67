package graph

import (
	"fmt"
	"math"
)

// A lowerFunc turns one ONNX node into builder calls. in[i] is nil for an
// absent optional input; the result has one value per node output (nil for
// outputs the operator does not compute when they are not requested).
type lowerFunc func(c *compiler, n *Node, in []*value) ([]*value, error)

// checkNode reports what can be known about a node without input shapes:
// an operator or domain we do not implement. Subgraphs are checked by
// checkSubgraphs.
func checkNode(n *Node, opset int) error {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return fmt.Errorf("%w: operator domain %q is not supported (only the default ONNX domain)", ErrUnsupportedOp, n.Domain)
	}
	if _, ok := operators[n.OpType]; !ok {
		return ErrUnsupportedOp
	}
	return nil
}

func need(in []*value, i int, what string) (*value, error) {
	if i >= len(in) || in[i] == nil {
		return nil, fmt.Errorf("%w: required input %d (%s) is missing", ErrInput, i, what)
	}
	return in[i], nil
}

// needAll returns the node's first len(names) inputs, all required; names
// are the inputs' names in the operator's specification, for the error.
func needAll(in []*value, names ...string) ([]*value, error) {
	vs := make([]*value, len(names))
	for i, name := range names {
		v, err := need(in, i, name)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

// inputAt returns input i, or nil when the node has fewer inputs (for the
// helpers, such as staticInts, that report a missing input).
func inputAt(in []*value, i int) *value {
	if i >= len(in) {
		return nil
	}
	return in[i]
}

func lowerIdentity(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	return []*value{x}, nil
}

// lowerDropout is the identity: the audit evaluates the model as it is used
// for prediction. The optional mask output is all true.
func lowerDropout(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	if len(in) > 2 && in[2] != nil {
		mode, err := staticInts(in[2], "training_mode")
		if err != nil {
			return nil, err
		}
		if len(mode) > 0 && mode[0] != 0 {
			return nil, fmt.Errorf("%w: Dropout in training mode is random; export the model in evaluation mode (model.eval())", ErrAttr)
		}
	}
	mask := NewInt(x.dims(), nil)
	for i := range mask.I {
		mask.I[i] = 1
	}
	return []*value{x, staticValue(mask)}, nil
}

func lowerConstant(c *compiler, n *Node, in []*value) ([]*value, error) {
	if t, ok, err := n.attrTensor("value"); err != nil || ok {
		return []*value{staticValue(t)}, err
	}
	if f, ok := n.Attrs["value_float"]; ok && f.Kind == AttrFloat {
		return []*value{staticValue(NewFloat(nil, []float64{f.F}))}, nil
	}
	if fs, ok, err := n.attrFloats("value_floats"); err != nil || ok {
		return []*value{staticValue(NewFloat([]int{len(fs)}, append([]float64(nil), fs...)))}, err
	}
	if i, ok := n.Attrs["value_int"]; ok && i.Kind == AttrInt {
		return []*value{staticValue(NewInt(nil, []int64{i.I}))}, nil
	}
	if is, ok, err := n.attrInts("value_ints"); err != nil || ok {
		return []*value{staticValue(NewInt([]int{len(is)}, append([]int64(nil), is...)))}, err
	}
	return nil, attrErr("Constant needs a value, value_float(s) or value_int(s) attribute (sparse and string constants are not supported)")
}

func lowerConstantOfShape(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	dims, err := staticInts(x, "shape")
	if err != nil {
		return nil, err
	}
	shape := toInts(dims)
	if _, err := CheckShape(shape); err != nil {
		return nil, err
	}
	t, ok, err := n.attrTensor("value")
	if err != nil {
		return nil, err
	}
	if !ok {
		return []*value{staticValue(NewFloat(shape, nil))}, nil
	}
	if t.Len() != 1 {
		return nil, attrErr("value must hold one element, it has %d", t.Len())
	}
	if t.DType == Int {
		out := NewInt(shape, nil)
		for i := range out.I {
			out.I[i] = t.I[0]
		}
		return []*value{staticValue(out)}, nil
	}
	out := NewFloat(shape, nil)
	for i := range out.F {
		out.F[i] = t.F[0]
	}
	return []*value{staticValue(out)}, nil
}

func lowerShape(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	r := int64(len(d))
	start, err := n.attrInt("start", 0)
	if err != nil {
		return nil, err
	}
	end, err := n.attrInt("end", r)
	if err != nil {
		return nil, err
	}
	clampAxis := func(a int64) int64 {
		if a < 0 {
			a += r
		}
		return max(0, min(a, r))
	}
	start, end = clampAxis(start), clampAxis(end)
	out := []int64{}
	for i := start; i < end; i++ {
		out = append(out, int64(d[i]))
	}
	return []*value{staticValue(NewInt([]int{len(out)}, out))}, nil
}

// castTarget maps an ONNX element type to how the value is held.
func castTarget(n *Node) (ElemType, error) {
	a, ok := n.Attrs["to"]
	if !ok {
		return 0, attrErr("Cast needs the attribute \"to\"")
	}
	switch a.Kind {
	case AttrInt:
		return ElemType(a.I), nil
	case AttrString: // opset 1 to 5 spelled the type
		for e, s := range elemNames {
			if s == a.S || (e == ElemFloat && a.S == "FLOAT") || (e == ElemDouble && a.S == "DOUBLE") {
				return e, nil
			}
		}
	}
	return 0, attrErr("Cast target %v is not a type", a)
}

func lowerCast(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	to, err := castTarget(n)
	if err != nil {
		return nil, err
	}
	dt, ok := to.DType()
	if !ok {
		return nil, attrErr("Cast to %s is not supported", to)
	}
	if dt == Float {
		if x.isStatic() && x.t.DType == Int {
			return []*value{staticValue(NewFloat(x.t.Shape, x.t.Float64s()))}, nil
		}
		return []*value{x}, nil
	}
	if !x.isStatic() {
		return nil, fmt.Errorf("%w: Cast of a value computed from the parameters or the data to %s", ErrNotDifferentiable, to)
	}
	out := NewInt(x.t.Shape, nil)
	if x.t.DType == Int {
		copy(out.I, x.t.I)
	} else {
		for i, v := range x.t.F {
			switch {
			case to == ElemBool:
				if v != 0 {
					out.I[i] = 1
				}
			case math.IsNaN(v):
				out.I[i] = 0
			default:
				out.I[i] = int64(v)
			}
		}
	}
	if to == ElemBool {
		for i, v := range out.I {
			if v != 0 {
				out.I[i] = 1
			}
		}
	}
	return []*value{staticValue(out)}, nil
}

func lowerBinary(op binOp) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		a, err := need(in, 0, "A")
		if err != nil {
			return nil, err
		}
		b, err := need(in, 1, "B")
		if err != nil {
			return nil, err
		}
		if c.g.Opset < 7 {
			if b, err = legacyBroadcast(c, n, a, b); err != nil {
				return nil, err
			}
		}
		v, err := c.binary(op, a, b)
		return []*value{v}, err
	}
}

// legacyBroadcast implements the broadcast and axis attributes of opsets
// before 7: B's dimensions match A's from axis on.
func legacyBroadcast(c *compiler, n *Node, a, b *value) (*value, error) {
	bc, err := n.attrInt("broadcast", 0)
	if err != nil || bc == 0 {
		return b, err
	}
	ad, bd := a.dims(), b.dims()
	axis, err := n.attrInt("axis", int64(len(ad)-len(bd)))
	if err != nil {
		return nil, err
	}
	ax, err := normAxis(axis, len(ad))
	if err != nil && len(bd) > 0 {
		return nil, err
	}
	shape := make([]int, len(ad))
	for i := range shape {
		shape[i] = 1
	}
	for i, d := range bd {
		if ax+i >= len(shape) {
			return nil, shapeErr("legacy broadcast of %v onto %v at axis %d", bd, ad, ax)
		}
		shape[ax+i] = d
	}
	return c.view(b, shape), nil
}

func lowerUnary(a *activation) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		x, err := need(in, 0, "X")
		if err != nil {
			return nil, err
		}
		if a == actNeg && x.isStatic() && x.t.DType == Int {
			out := NewInt(x.t.Shape, nil)
			for i, v := range x.t.I {
				out.I[i] = -v
			}
			return []*value{staticValue(out)}, nil
		}
		return []*value{c.unary(a, x)}, nil
	}
}

func lowerLeakyRelu(c *compiler, n *Node, in []*value) ([]*value, error) {
	alpha, err := n.attrFloat("alpha", 0.01)
	if err != nil {
		return nil, err
	}
	return lowerUnary(actLeakyRelu(alpha))(c, n, in)
}

func lowerSoftmax(log bool) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		x, err := need(in, 0, "input")
		if err != nil {
			return nil, err
		}
		d := x.dims()
		if c.g.Opset < 13 {
			axis, err := n.attrInt("axis", 1)
			if err != nil {
				return nil, err
			}
			if axis < 0 {
				axis += int64(len(d))
			}
			if axis < 0 || int(axis) > len(d) {
				return nil, attrErr("axis %d out of range for rank %d", axis, len(d))
			}
			flat := c.view(x, []int{numel(d[:axis]), numel(d[axis:])})
			return []*value{c.view(c.softmax(flat, 1, log), d)}, nil
		}
		axis, err := n.attrInt("axis", -1)
		if err != nil {
			return nil, err
		}
		ax, err := normAxis(axis, len(d))
		if err != nil {
			return nil, err
		}
		return []*value{c.softmax(x, ax, log)}, nil
	}
}

func lowerMatMul(c *compiler, n *Node, in []*value) ([]*value, error) {
	a, err := need(in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, err := need(in, 1, "B")
	if err != nil {
		return nil, err
	}
	v, err := c.matmul(a, b)
	return []*value{v}, err
}

// lowerGemm: Y = alpha * A' B' + beta * C, A' and B' optionally transposed.
func lowerGemm(c *compiler, n *Node, in []*value) ([]*value, error) {
	a, err := need(in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, err := need(in, 1, "B")
	if err != nil {
		return nil, err
	}
	if len(a.dims()) != 2 || len(b.dims()) != 2 {
		return nil, shapeErr("Gemm needs matrices, got shapes %v and %v", a.dims(), b.dims())
	}
	ta, err := n.attrInt("transA", 0)
	if err != nil {
		return nil, err
	}
	tb, err := n.attrInt("transB", 0)
	if err != nil {
		return nil, err
	}
	alpha, err := n.attrFloat("alpha", 1)
	if err != nil {
		return nil, err
	}
	beta, err := n.attrFloat("beta", 1)
	if err != nil {
		return nil, err
	}
	if ta != 0 {
		a = c.transpose(a, []int{1, 0})
	}
	if tb != 0 {
		b = c.transpose(b, []int{1, 0})
	}
	y, err := c.matmul(a, b)
	if err != nil {
		return nil, err
	}
	if alpha != 1 {
		y = c.mustBinary(opMul, y, c.scalar(alpha))
	}
	if len(in) > 2 && in[2] != nil && beta != 0 {
		cv := in[2]
		if beta != 1 {
			cv = c.mustBinary(opMul, cv, c.scalar(beta))
		}
		shape, ok := broadcastShape(y.dims(), cv.dims())
		if !ok || !sameShape(shape, y.dims()) {
			return nil, shapeErr("Gemm: C of shape %v does not broadcast to %v", cv.dims(), y.dims())
		}
		y = c.mustBinary(opAdd, y, cv)
	}
	return []*value{y}, nil
}

func lowerTranspose(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	r := len(x.dims())
	p, ok, err := n.attrInts("perm")
	if err != nil {
		return nil, err
	}
	perm := make([]int, r)
	if !ok {
		for i := range perm {
			perm[i] = r - 1 - i
		}
	} else {
		if len(p) != r {
			return nil, attrErr("perm %v has %d entries for rank %d", p, len(p), r)
		}
		seen := make([]bool, r)
		for i, v := range p {
			a, err := normAxis(v, r)
			if err != nil || seen[a] {
				return nil, attrErr("perm %v is not a permutation of 0..%d", p, r-1)
			}
			seen[a] = true
			perm[i] = a
		}
	}
	return []*value{c.transpose(x, perm)}, nil
}

// axesArg reads the axes of Squeeze/Unsqueeze/Reduce-style operators: an
// attribute before opset 13, an optional input from 13 on.
func axesArg(c *compiler, n *Node, in []*value, idx int) ([]int64, bool, error) {
	if c.g.Opset < 13 {
		return n.attrInts("axes")
	}
	if len(in) <= idx || in[idx] == nil {
		return nil, false, nil
	}
	a, err := staticInts(in[idx], "axes")
	return a, true, err
}

func lowerSqueeze(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	axes, ok, err := axesArg(c, n, in, 1)
	if err != nil {
		return nil, err
	}
	drop := make([]bool, len(d))
	if !ok {
		for i, v := range d {
			drop[i] = v == 1
		}
	}
	for _, a := range axes {
		ax, err := normAxis(a, len(d))
		if err != nil {
			return nil, err
		}
		if d[ax] != 1 {
			return nil, shapeErr("cannot squeeze axis %d of shape %v: its size is not 1", a, d)
		}
		drop[ax] = true
	}
	var shape []int
	for i, v := range d {
		if !drop[i] {
			shape = append(shape, v)
		}
	}
	return []*value{c.view(x, shape)}, nil
}

func lowerUnsqueeze(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	axes, ok, err := axesArg(c, n, in, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, attrErr("Unsqueeze needs axes")
	}
	r := len(d) + len(axes)
	insert := make([]bool, r)
	for _, a := range axes {
		ax, err := normAxis(a, r)
		if err != nil {
			return nil, err
		}
		if insert[ax] {
			return nil, attrErr("axis %d repeated in %v", a, axes)
		}
		insert[ax] = true
	}
	shape := make([]int, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if insert[i] {
			shape = append(shape, 1)
		} else {
			shape = append(shape, d[j])
			j++
		}
	}
	return []*value{c.view(x, shape)}, nil
}

func lowerReshape(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	var spec []int64
	if c.g.Opset < 5 {
		s, _, err := n.attrInts("shape")
		if err != nil {
			return nil, err
		}
		spec = s
	} else if spec, err = staticInts(inputAt(in, 1), "shape"); err != nil {
		return nil, err
	}
	allowZero, err := n.attrInt("allowzero", 0)
	if err != nil {
		return nil, err
	}
	d := x.dims()
	shape := make([]int, len(spec))
	infer := -1
	known := 1
	for i, s := range spec {
		switch {
		case s == 0 && allowZero == 0:
			if i >= len(d) {
				return nil, shapeErr("shape %v copies dimension %d of %v, which has no such dimension", spec, i, d)
			}
			shape[i] = d[i]
		case s == -1:
			if infer >= 0 {
				return nil, shapeErr("shape %v has more than one -1", spec)
			}
			infer = i
			continue
		case s < 0:
			return nil, shapeErr("shape %v has a negative dimension", spec)
		default:
			shape[i] = int(s)
		}
		known *= shape[i]
	}
	total := numel(d)
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, shapeErr("cannot reshape %v to %v", d, spec)
		}
		shape[infer] = total / known
	}
	if numel(shape) != total {
		return nil, shapeErr("cannot reshape %v (%d elements) to %v", d, total, spec)
	}
	return []*value{c.view(x, shape)}, nil
}

func lowerFlatten(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	axis, err := n.attrInt("axis", 1)
	if err != nil {
		return nil, err
	}
	if axis < 0 {
		axis += int64(len(d))
	}
	if axis < 0 || int(axis) > len(d) {
		return nil, attrErr("axis %d out of range for rank %d", axis, len(d))
	}
	return []*value{c.view(x, []int{numel(d[:axis]), numel(d[axis:])})}, nil
}

func lowerConcat(c *compiler, n *Node, in []*value) ([]*value, error) {
	axis, err := n.attrInt("axis", math.MinInt64)
	if err != nil {
		return nil, err
	}
	if axis == math.MinInt64 {
		return nil, attrErr("Concat needs an axis")
	}
	var vs []*value
	for _, v := range in {
		if v != nil {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("%w: Concat has no inputs", ErrInput)
	}
	ax, err := normAxis(axis, len(vs[0].dims()))
	if err != nil {
		return nil, err
	}
	v, err := c.concat(ax, vs...)
	return []*value{v}, err
}

func lowerSplit(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	axis, err := n.attrInt("axis", 0)
	if err != nil {
		return nil, err
	}
	ax, err := normAxis(axis, len(d))
	if err != nil {
		return nil, err
	}
	var split []int64
	var given bool
	if c.g.Opset < 13 {
		split, given, err = n.attrInts("split")
	} else if len(in) > 1 && in[1] != nil {
		split, err = staticInts(in[1], "split")
		given = true
	}
	if err != nil {
		return nil, err
	}
	nout := len(n.Outputs)
	if !given {
		if num, err := n.attrInt("num_outputs", 0); err != nil {
			return nil, err
		} else if num > 0 {
			nout = int(num)
		}
		chunk := d[ax] / nout
		if d[ax]%nout != 0 {
			if c.g.Opset < 18 {
				return nil, shapeErr("cannot split dimension %d of size %d into %d equal parts", ax, d[ax], nout)
			}
			chunk = (d[ax] + nout - 1) / nout
		}
		split = make([]int64, nout)
		left := d[ax]
		for i := range split {
			split[i] = int64(min(chunk, left))
			left -= int(split[i])
		}
	}
	total := 0
	for _, s := range split {
		if s < 0 {
			return nil, attrErr("negative split %v", split)
		}
		total += int(s)
	}
	if total != d[ax] {
		return nil, shapeErr("split %v does not add up to dimension %d of size %d", split, ax, d[ax])
	}
	outs := make([]*value, len(split))
	off := 0
	for i, s := range split {
		outs[i] = c.sliceAxis(x, ax, off, off+int(s))
		off += int(s)
	}
	return outs, nil
}

func lowerSlice(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	var starts, ends, axes, steps []int64
	if c.g.Opset < 10 {
		var ok bool
		if starts, _, err = n.attrInts("starts"); err != nil {
			return nil, err
		}
		if ends, _, err = n.attrInts("ends"); err != nil {
			return nil, err
		}
		if axes, ok, err = n.attrInts("axes"); err != nil {
			return nil, err
		}
		_ = ok
	} else {
		if starts, err = staticInts(inputAt(in, 1), "starts"); err != nil {
			return nil, err
		}
		if ends, err = staticInts(inputAt(in, 2), "ends"); err != nil {
			return nil, err
		}
		if len(in) > 3 && in[3] != nil {
			if axes, err = staticInts(in[3], "axes"); err != nil {
				return nil, err
			}
		}
		if len(in) > 4 && in[4] != nil {
			if steps, err = staticInts(in[4], "steps"); err != nil {
				return nil, err
			}
		}
	}
	if len(starts) != len(ends) {
		return nil, attrErr("starts %v and ends %v differ in length", starts, ends)
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		for range starts {
			steps = append(steps, 1)
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, attrErr("starts, ends, axes and steps differ in length")
	}
	st := make([]int, len(d))
	sp := make([]int, len(d))
	cnt := append([]int(nil), d...)
	for i := range sp {
		sp[i] = 1
	}
	seen := make([]bool, len(d))
	for i, a := range axes {
		ax, err := normAxis(a, len(d))
		if err != nil {
			return nil, err
		}
		if seen[ax] {
			return nil, attrErr("axis %d repeated in %v", a, axes)
		}
		seen[ax] = true
		dim := int64(d[ax])
		s, e, step := starts[i], ends[i], steps[i]
		if step == 0 {
			return nil, attrErr("step 0 on axis %d", a)
		}
		if s < 0 {
			s += dim
		}
		if e < 0 {
			e += dim
		}
		var count int64
		if step > 0 {
			s = max(0, min(s, dim))
			e = max(0, min(e, dim))
			if e > s {
				count = (e - s + step - 1) / step
			}
		} else {
			s = max(0, min(s, dim-1))
			e = max(-1, min(e, dim-1))
			if s > e {
				count = (s - e + (-step) - 1) / (-step)
			}
		}
		st[ax], sp[ax], cnt[ax] = int(s), int(step), int(count)
	}
	return []*value{c.slice(x, st, sp, cnt)}, nil
}

func lowerGather(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	iv, err := need(in, 1, "indices")
	if err != nil {
		return nil, err
	}
	idx, err := staticInts(iv, "indices")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	axis, err := n.attrInt("axis", 0)
	if err != nil {
		return nil, err
	}
	ax, err := normAxis(axis, len(d))
	if err != nil {
		return nil, err
	}
	ind := make([]int, len(idx))
	for i, k := range idx {
		if k < 0 {
			k += int64(d[ax])
		}
		if k < 0 || k >= int64(d[ax]) {
			return nil, shapeErr("index %d out of range for axis %d of size %d", idx[i], ax, d[ax])
		}
		ind[i] = int(k)
	}
	return []*value{c.gather(x, ax, ind, iv.dims())}, nil
}

func lowerExpand(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	sv, err := need(in, 1, "shape")
	if err != nil {
		return nil, err
	}
	s, err := staticInts(sv, "shape")
	if err != nil {
		return nil, err
	}
	shape, ok := broadcastShape(x.dims(), toInts(s))
	if !ok {
		return nil, shapeErr("cannot expand shape %v to %v", x.dims(), s)
	}
	return []*value{c.expand(x, shape)}, nil
}
