package graph

import (
	"fmt"
	"math"
	"sort"
)

// Operators that the graph evaluates only at compile time: PyTorch uses them
// on sequence lengths and shapes (pack_padded_sequence exports TopK, Range,
// ReduceProd and ScatterElements to sort the batch by length). Their inputs
// must be known before the model runs; otherwise the lowering fails with
// ErrNotDifferentiable, naming the node.

// staticInputs returns the tensors of the node's present inputs, all of
// which must be static.
func staticInputs(n *Node, in []*value) ([]*Tensor, error) {
	ts := make([]*Tensor, len(in))
	for i, v := range in {
		if v == nil {
			continue
		}
		if !v.isStatic() {
			return nil, fmt.Errorf("%w: %s is supported only on values known before the model runs (shapes, lengths, constants), but input %d (%q) depends on the parameters or the float inputs", ErrNotDifferentiable, n.OpType, i, n.Inputs[i])
		}
		ts[i] = v.t
	}
	return ts, nil
}

// like returns a new tensor of t's kind with the given shape and values
// (held as float64; converted back for Int).
func like(t *Tensor, shape []int, vals []float64) *Tensor {
	if t.DType == Int {
		out := NewInt(shape, nil)
		for i, v := range vals {
			out.I[i] = int64(v)
		}
		return out
	}
	return NewFloat(shape, vals)
}

func lowerTopK(c *compiler, n *Node, in []*value) ([]*value, error) {
	ts, err := staticInputs(n, in)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 || ts[0] == nil {
		return nil, fmt.Errorf("%w: TopK needs X", ErrInput)
	}
	x := ts[0]
	var k int64
	if c.g.Opset < 10 {
		if k, err = n.attrInt("k", -1); err != nil {
			return nil, err
		}
	} else {
		if len(ts) < 2 || ts[1] == nil || ts[1].Len() != 1 {
			return nil, fmt.Errorf("%w: TopK needs K as a one-element input", ErrInput)
		}
		k = ts[1].Int64s()[0]
	}
	axis, err := n.attrInt("axis", -1)
	if err != nil {
		return nil, err
	}
	ax, err := normAxis(axis, x.Rank())
	if err != nil {
		return nil, err
	}
	largest, err := n.attrInt("largest", 1)
	if err != nil {
		return nil, err
	}
	d := x.Shape
	if k < 0 || int(k) > d[ax] {
		return nil, shapeErr("TopK k=%d for axis of size %d", k, d[ax])
	}
	outer, m, inner := numel(d[:ax]), d[ax], numel(d[ax+1:])
	shape := append([]int(nil), d...)
	shape[ax] = int(k)
	vals := make([]float64, numel(shape))
	idxs := make([]float64, numel(shape))
	xv := x.Float64s()
	order := make([]int, m)
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			at := func(i int) float64 { return xv[(o*m+i)*inner+j] }
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool {
				if largest != 0 {
					return at(order[a]) > at(order[b])
				}
				return at(order[a]) < at(order[b])
			})
			for i := 0; i < int(k); i++ {
				p := (o*int(k)+i)*inner + j
				vals[p] = at(order[i])
				idxs[p] = float64(order[i])
			}
		}
	}
	return []*value{staticValue(like(x, shape, vals)), staticValue(like(NewInt(nil, []int64{0}), shape, idxs))}, nil
}

func lowerReduceProd(c *compiler, n *Node, in []*value) ([]*value, error) {
	ts, err := staticInputs(n, in)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	var axes []int64
	if c.g.Opset < 18 {
		axes, _, err = n.attrInts("axes")
	} else if len(ts) > 1 && ts[1] != nil {
		axes = ts[1].Int64s()
	}
	if err != nil {
		return nil, err
	}
	keep, err := n.attrInt("keepdims", 1)
	if err != nil {
		return nil, err
	}
	noop, err := n.attrInt("noop_with_empty_axes", 0)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 && noop != 0 {
		return []*value{staticValue(x)}, nil
	}
	r := x.Rank()
	red := make([]bool, r)
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		ax, err := normAxis(a, r)
		if err != nil {
			return nil, err
		}
		red[ax] = true
	}
	var shape, kept []int
	for i, dim := range x.Shape {
		switch {
		case !red[i]:
			shape = append(shape, dim)
			kept = append(kept, dim)
		case keep != 0:
			kept = append(kept, 1)
		}
	}
	outShapeFull := make([]int, r)
	for i, dim := range x.Shape {
		outShapeFull[i] = dim
		if red[i] {
			outShapeFull[i] = 1
		}
	}
	vals := make([]float64, numel(outShapeFull))
	for i := range vals {
		vals[i] = 1
	}
	ost := stridesOf(outShapeFull)
	xv := x.Float64s()
	st := make([]int, r)
	for i := range st {
		if !red[i] {
			st[i] = ost[i]
		}
	}
	walk(x.Shape, st, 0, func(i, dst int) { vals[dst] *= xv[i] })
	if keep != 0 {
		shape = kept
	}
	return []*value{staticValue(like(x, shape, vals))}, nil
}

func lowerRange(c *compiler, n *Node, in []*value) ([]*value, error) {
	ts, err := staticInputs(n, in)
	if err != nil {
		return nil, err
	}
	if len(ts) != 3 || ts[0] == nil || ts[1] == nil || ts[2] == nil || ts[0].Len() != 1 || ts[1].Len() != 1 || ts[2].Len() != 1 {
		return nil, fmt.Errorf("%w: Range needs three scalars start, limit, delta", ErrInput)
	}
	start, limit, delta := ts[0].Float64s()[0], ts[1].Float64s()[0], ts[2].Float64s()[0]
	if delta == 0 {
		return nil, fmt.Errorf("%w: Range with delta 0", ErrInput)
	}
	if math.IsNaN(start) || math.IsInf(start, 0) || math.IsNaN(limit) || math.IsInf(limit, 0) || math.IsNaN(delta) || math.IsInf(delta, 0) {
		return nil, fmt.Errorf("%w: Range(start %g, limit %g, delta %g): every one must be finite", ErrInput, start, limit, delta)
	}
	steps := math.Max(math.Ceil((limit-start)/delta), 0)
	if steps > MaxElements {
		return nil, fmt.Errorf("%w: Range(start %g, limit %g, delta %g) has %.4g elements, more than the budget of %d for one tensor", ErrTooLarge, start, limit, delta, steps, MaxElements)
	}
	cnt := int(steps)
	vals := make([]float64, cnt)
	for i := range vals {
		vals[i] = start + float64(i)*delta
	}
	return []*value{staticValue(like(ts[0], []int{cnt}, vals))}, nil
}

func lowerScatterElements(c *compiler, n *Node, in []*value) ([]*value, error) {
	ts, err := staticInputs(n, in)
	if err != nil {
		return nil, err
	}
	if len(ts) != 3 || ts[0] == nil || ts[1] == nil || ts[2] == nil {
		return nil, fmt.Errorf("%w: ScatterElements needs data, indices and updates", ErrInput)
	}
	data, idx, upd := ts[0], ts[1], ts[2]
	if red, err := n.attrString("reduction", "none"); err != nil || red != "none" {
		if err == nil {
			err = attrErr("ScatterElements reduction %q is not supported", red)
		}
		return nil, err
	}
	axis, err := n.attrInt("axis", 0)
	if err != nil {
		return nil, err
	}
	ax, err := normAxis(axis, data.Rank())
	if err != nil {
		return nil, err
	}
	if !sameShape(idx.Shape, upd.Shape) || idx.Rank() != data.Rank() {
		return nil, shapeErr("ScatterElements indices %v and updates %v must have data's rank %d", idx.Shape, upd.Shape, data.Rank())
	}
	out := append([]float64(nil), data.Float64s()...)
	dst := stridesOf(data.Shape)
	iv, uv := idx.Int64s(), upd.Float64s()
	ist := stridesOf(idx.Shape)
	for i := range iv {
		p, rem := 0, i
		for a := range idx.Shape {
			pos := rem / ist[a]
			rem %= ist[a]
			if a == ax {
				k := iv[i]
				if k < 0 {
					k += int64(data.Shape[a])
				}
				if k < 0 || k >= int64(data.Shape[a]) {
					return nil, shapeErr("ScatterElements index %d out of range for axis of size %d", iv[i], data.Shape[a])
				}
				pos = int(k)
			}
			p += pos * dst[a]
		}
		out[p] = uv[i]
	}
	return []*value{staticValue(like(data, data.Shape, out))}, nil
}
