package graph

import "fmt"

// Builder methods: every lowering is written with these. Each returns a
// static value when its inputs are static (the work is done at compile
// time), and otherwise appends a step.

// transpose permutes the axes of v: output axis i is input axis perm[i].
func (c *compiler) transpose(v *value, perm []int) *value {
	identity := true
	for i, p := range perm {
		if p != i {
			identity = false
		}
	}
	if identity {
		return v
	}
	shape, idx := transposeMap(v.dims(), perm)
	return c.emit(&mapK{idx: idx}, shape, v)
}

// slice takes count[a] positions along each axis a, from starts[a] in
// strides of steps[a] (which may be negative).
func (c *compiler) slice(v *value, starts, steps, count []int) *value {
	if off, ok := contiguous(v.dims(), starts, steps, count); ok {
		return c.viewAt(v, count, off)
	}
	return c.emit(&mapK{idx: sliceMap(v.dims(), starts, steps, count)}, count, v)
}

// contiguous reports whether a slice selects one contiguous run of
// elements, and its offset. Call an axis whole when the slice keeps all of
// it in order. The run is contiguous when every axis after the last
// non-whole one j is whole, j is taken with step 1, and every axis before
// j keeps one position.
func contiguous(shape, starts, steps, count []int) (int, bool) {
	whole := func(a int) bool {
		return count[a] == shape[a] && starts[a] == 0 && (steps[a] == 1 || count[a] <= 1)
	}
	j := len(shape) - 1
	for j >= 0 && whole(j) {
		j--
	}
	if j >= 0 && count[j] > 1 && steps[j] != 1 {
		return 0, false
	}
	for a := 0; a < j; a++ {
		if count[a] != 1 {
			return 0, false
		}
	}
	off := 0
	st := stridesOf(shape)
	for a := range shape {
		off += starts[a] * st[a]
	}
	return off, true
}

// sliceAxis takes positions [from, to) of one axis.
func (c *compiler) sliceAxis(v *value, axis, from, to int) *value {
	shape := v.dims()
	starts := make([]int, len(shape))
	steps := make([]int, len(shape))
	count := append([]int(nil), shape...)
	for a := range steps {
		steps[a] = 1
	}
	starts[axis] = from
	count[axis] = to - from
	return c.slice(v, starts, steps, count)
}

// gather takes the listed positions (non-negative, in range) along axis;
// the index tensor has shape idxShape.
func (c *compiler) gather(v *value, axis int, indices []int, idxShape []int) *value {
	shape, idx := gatherMap(v.dims(), axis, indices, idxShape)
	return c.emit(&mapK{idx: idx}, shape, v)
}

// concat joins values along axis; all other dimensions must agree.
func (c *compiler) concat(axis int, vs ...*value) (*value, error) {
	if len(vs) == 0 {
		return nil, shapeErr("nothing to concatenate")
	}
	first := vs[0].dims()
	if axis < 0 || axis >= len(first) {
		return nil, shapeErr("axis %d out of range for rank %d", axis, len(first))
	}
	shape := append([]int(nil), first...)
	shape[axis] = 0
	k := &concatK{outer: numel(first[:axis])}
	for _, v := range vs {
		d := v.dims()
		if len(d) != len(first) {
			return nil, shapeErr("cannot concatenate shapes %v and %v", first, d)
		}
		for a := range d {
			if a != axis && d[a] != first[a] {
				return nil, shapeErr("cannot concatenate shapes %v and %v along axis %d", first, d, axis)
			}
		}
		shape[axis] += d[axis]
		k.chunk = append(k.chunk, numel(d[axis:]))
	}
	if len(vs) == 1 {
		return vs[0], nil
	}
	return c.emit(k, shape, vs...), nil
}

// expand broadcasts v to shape (which must be a broadcast of v's shape).
func (c *compiler) expand(v *value, shape []int) *value {
	if sameShape(v.dims(), shape) {
		return v
	}
	c.fit(shape)
	return c.emit(&mapK{idx: broadcastMap(v.dims(), shape)}, shape, v)
}

// binary applies an arithmetic operator with numpy broadcasting.
func (c *compiler) binary(op binOp, a, b *value) (*value, error) {
	shape, ok := broadcastShape(a.dims(), b.dims())
	if !ok {
		return nil, shapeErr("%s of shapes %v and %v: they do not broadcast", op, a.dims(), b.dims())
	}
	if _, err := CheckShape(shape); err != nil {
		return nil, err
	}
	k := &binK{op: op, ia: broadcastMap(a.dims(), shape), ib: broadcastMap(b.dims(), shape)}
	return c.emit(k, shape, a, b), nil
}

// mustBinary is binary for operands whose shapes are known to broadcast.
func (c *compiler) mustBinary(op binOp, a, b *value) *value {
	v, err := c.binary(op, a, b)
	if err != nil {
		panic(err)
	}
	return v
}

// unary applies an activation elementwise.
func (c *compiler) unary(a *activation, v *value) *value {
	return c.emit(&unaryK{a: a}, v.dims(), v)
}

// scalar is a static Float scalar.
func (c *compiler) scalar(x float64) *value {
	return staticValue(NewFloat(nil, []float64{x}))
}

// matmul is numpy matmul: batched over leading dimensions with
// broadcasting, 1-D operands promoted and the promoted axis removed.
func (c *compiler) matmul(a, b *value) (*value, error) {
	as, bs := a.dims(), b.dims()
	if len(as) == 0 || len(bs) == 0 {
		return nil, shapeErr("MatMul of a scalar (shapes %v and %v)", as, bs)
	}
	aa, bb := as, bs
	if len(as) == 1 {
		aa = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bb = []int{bs[0], 1}
	}
	m, k := aa[len(aa)-2], aa[len(aa)-1]
	k2, n := bb[len(bb)-2], bb[len(bb)-1]
	if k != k2 {
		return nil, shapeErr("MatMul of shapes %v and %v: inner dimensions %d and %d differ", as, bs, k, k2)
	}
	batch, ok := broadcastShape(aa[:len(aa)-2], bb[:len(bb)-2])
	if !ok {
		return nil, shapeErr("MatMul of shapes %v and %v: batch dimensions do not broadcast", as, bs)
	}
	ka := &matmulK{m: m, k: k, n: n}
	if len(bb) == 2 && sameShape(aa[:len(aa)-2], batch) {
		// B is shared by every batch entry: one product of all rows of A.
		ka.m = numel(batch) * m
		ka.ia, ka.ib = []int{0}, []int{0}
	} else {
		ma := broadcastMap(aa[:len(aa)-2], batch)
		mb := broadcastMap(bb[:len(bb)-2], batch)
		for i := 0; i < numel(batch); i++ {
			ka.ia = append(ka.ia, at(ma, i)*m*k)
			ka.ib = append(ka.ib, at(mb, i)*k*n)
		}
	}
	shape := append(append([]int(nil), batch...), m, n)
	out := c.emit(ka, shape, a, b)
	switch {
	case len(as) == 1 && len(bs) == 1:
		return c.view(out, nil), nil
	case len(as) == 1:
		return c.view(out, append(append([]int(nil), batch...), n)), nil
	case len(bs) == 1:
		return c.view(out, append(append([]int(nil), batch...), m)), nil
	}
	return out, nil
}

// matmulAdd is matmul(a, b) + d, fused into one kernel when d broadcasts
// to the product's shape.
func (c *compiler) matmulAdd(a, b, d *value) (*value, error) {
	y, err := c.matmul(a, b)
	if err != nil {
		return nil, err
	}
	shape, ok := broadcastShape(y.dims(), d.dims())
	if !ok {
		return nil, shapeErr("cannot add shape %v to the product's %v", d.dims(), y.dims())
	}
	// A product of constants is folded and emits no step: there is no
	// kernel to fuse the addition into.
	if y.isStatic() || len(c.p.steps) == 0 {
		return c.binary(opAdd, y, d)
	}
	last := c.p.steps[len(c.p.steps)-1]
	mk, isMM := last.k.(*matmulK)
	if !isMM || last.out != y.slot || !sameShape(shape, y.dims()) || mk.add {
		return c.binary(opAdd, y, d)
	}
	mk.add = true
	mk.addIdx = broadcastMap(d.dims(), shape)
	mk.addRow = mk.addIdx != nil && numel(d.dims()) == mk.n && len(d.dims()) >= 1 && d.dims()[len(d.dims())-1] == mk.n
	c.p.steps[len(c.p.steps)-1].in = append(last.in, c.slotOf(d))
	return y, nil
}

// softmax computes softmax (or log-softmax) along one axis.
func (c *compiler) softmax(v *value, axis int, log bool) *value {
	d := v.dims()
	k := &softmaxK{outer: numel(d[:axis]), n: d[axis], inner: numel(d[axis+1:]), log: log}
	return c.emit(k, d, v)
}

// normAxis turns a possibly negative axis into one in [0, rank).
func normAxis(axis int64, rank int) (int, error) {
	a := int(axis)
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		return 0, attrErr("axis %d out of range for rank %d", axis, rank)
	}
	return a, nil
}

// staticInts returns the values of a static integer input, or an error
// naming the input when it is not known at compile time.
func staticInts(v *value, what string) ([]int64, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: input %s is missing", ErrInput, what)
	}
	if !v.isStatic() {
		return nil, fmt.Errorf("%w: input %s %v", ErrNotDifferentiable, what, errNotStatic)
	}
	return v.t.Int64s(), nil
}
