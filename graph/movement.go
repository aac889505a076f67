package graph

// Index maps for data movement. Each builder returns, for every element of
// the output in row-major order, the flat index of the input element it
// copies. mapK applies such a map; its derivative rules are a scatter-add.

// transposeMap permutes the axes of shape: output axis i is input axis
// perm[i].
func transposeMap(shape, perm []int) (outShape []int, idx []int32) {
	r := len(shape)
	outShape = make([]int, r)
	st := stridesOf(shape)
	ost := make([]int, r) // input stride for each output axis
	for i, p := range perm {
		outShape[i] = shape[p]
		ost[i] = st[p]
	}
	idx = make([]int32, numel(outShape))
	walk(outShape, ost, 0, func(i, src int) { idx[i] = int32(src) })
	return outShape, idx
}

// walk visits every element of a tensor of shape outShape in row-major
// order, calling f with the output position and base + sum(index*strides).
func walk(outShape, strides []int, base int, f func(i, src int)) {
	n := numel(outShape)
	if n == 0 {
		return
	}
	r := len(outShape)
	if r == 0 {
		f(0, base)
		return
	}
	pos := make([]int, r)
	src := base
	last := r - 1
	for i := 0; i < n; i++ {
		f(i, src)
		// Advance the multi-index.
		for ax := last; ax >= 0; ax-- {
			pos[ax]++
			src += strides[ax]
			if pos[ax] < outShape[ax] {
				break
			}
			src -= strides[ax] * pos[ax]
			pos[ax] = 0
		}
	}
}

// broadcastShape returns the numpy broadcast of shapes a and b, and false
// when they are not compatible.
func broadcastShape(a, b []int) ([]int, bool) {
	r := len(a)
	if len(b) > r {
		r = len(b)
	}
	out := make([]int, r)
	for i := 0; i < r; i++ {
		da, db := 1, 1
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, false
		}
	}
	return out, true
}

// broadcastMap maps each element of outShape to the element of a tensor of
// shape in (numpy-broadcastable to outShape) that it takes. It returns nil
// when in equals outShape, meaning the identity.
func broadcastMap(in, outShape []int) []int32 {
	if sameShape(in, outShape) {
		return nil
	}
	r := len(outShape)
	st := stridesOf(in)
	bst := make([]int, r)
	for i := 0; i < r; i++ {
		j := i - (r - len(in))
		if j >= 0 && in[j] != 1 {
			bst[i] = st[j]
		}
	}
	idx := make([]int32, numel(outShape))
	walk(outShape, bst, 0, func(i, src int) { idx[i] = int32(src) })
	return idx
}

// sliceMap selects, along each axis a, the positions starts[a],
// starts[a]+steps[a], ... up to count[a] of them.
func sliceMap(shape, starts, steps, count []int) []int32 {
	st := stridesOf(shape)
	bst := make([]int, len(shape))
	base := 0
	for a := range shape {
		base += starts[a] * st[a]
		bst[a] = steps[a] * st[a]
	}
	idx := make([]int32, numel(count))
	walk(count, bst, base, func(i, src int) { idx[i] = int32(src) })
	return idx
}

// gatherMap takes, along axis, the positions listed in indices (already
// made non-negative and in range). The output shape is
// shape[:axis] + idxShape + shape[axis+1:].
func gatherMap(shape []int, axis int, indices []int, idxShape []int) (outShape []int, idx []int32) {
	outShape = append(append(append([]int{}, shape[:axis]...), idxShape...), shape[axis+1:]...)
	outer := numel(shape[:axis])
	inner := numel(shape[axis+1:])
	n := shape[axis]
	idx = make([]int32, 0, numel(outShape))
	for o := 0; o < outer; o++ {
		for _, k := range indices {
			base := (o*n + k) * inner
			for j := 0; j < inner; j++ {
				idx = append(idx, int32(base+j))
			}
		}
	}
	return outShape, idx
}
