package graph

import (
	"fmt"
	"math"
)

// Convolution, pooling and padding, all lowered onto index maps: a window
// map gathers every output position's receptive field (im2col), padded
// positions taking a fill value; Conv is then one matrix product with the
// weights on the right (so per-example gradients follow it), pooling one
// reduction, and Pad and Tile are a single index map. Any number of
// spatial axes is accepted (1-D and 2-D are what recurrent front ends use).

// mapFill is an index map whose entries -1 take the value fill. near is
// the same map with every -1 replaced by the input element an edge-padded
// map takes there (each coordinate clamped into range): an element of the
// same example, which the example analysis attributes the padding to.
func (c *compiler) mapFill(v *value, shape []int, idx, near []int32, fill float64) *value {
	f := NewFloat(nil, []float64{fill})
	if v.isStatic() && v.t.DType == Int {
		f = NewInt(nil, []int64{int64(fill)})
	}
	return c.mapFillValue(v, shape, idx, near, staticValue(f))
}

// mapFillValue is mapFill with a one-element value as the fill, which may
// be computed at run time (and then gets the derivative of the padding).
func (c *compiler) mapFillValue(v *value, shape []int, idx, near []int32, fill *value) *value {
	n := numel(v.dims())
	padded := false
	for _, j := range idx {
		if j < 0 {
			padded = true
			break
		}
	}
	if !padded {
		if n == numel(shape) && isIota(idx) {
			return c.view(v, shape)
		}
		return c.emit(&mapK{idx: idx}, shape, v)
	}
	return c.emit(&padK{idx: idx, near: near}, shape, v, c.view(fill, nil))
}

// padK is an index map with padding: out[i] = x[idx[i]], or the one
// element of its second input (the fill) where idx[i] is -1. near is the
// map with every -1 replaced by a nearby input element (see nearest): the
// example a padded element belongs to.
type padK struct{ idx, near []int32 }

func (k *padK) keepsInt() bool { return true }

func (k *padK) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		src, f := in[0].I, in[1].I[0]
		for i, j := range k.idx {
			if j < 0 {
				out.I[i] = f
			} else {
				out.I[i] = src[j]
			}
		}
		return
	}
	src, f := in[0].F, in[1].F[0]
	for i, j := range k.idx {
		if j < 0 {
			out.F[i] = f
		} else {
			out.F[i] = src[j]
		}
	}
}

func (k *padK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	for i, j := range k.idx {
		v := 0.0
		switch {
		case j >= 0 && din[0] != nil:
			v = din[0].F[j]
		case j < 0 && din[1] != nil:
			v = din[1].F[0]
		}
		dout.F[i] = v
	}
}

func (k *padK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	for i, j := range k.idx {
		switch {
		case j >= 0 && gin[0] != nil:
			gin[0].F[j] += g.F[i]
		case j < 0 && gin[1] != nil:
			gin[1].F[0] += g.F[i]
		}
	}
}

// vjpTangent: the map is linear.
func (k *padK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
}

func (k *padK) exampleIDs(out []float64, in []*Tensor) {
	for i, j := range k.near {
		out[i] = in[0].F[j]
	}
}

func isIota(idx []int32) bool {
	for i, j := range idx {
		if int(j) != i {
			return false
		}
	}
	return true
}

// axisMap is an index map that is separable by axis: output position o on
// axis a takes input position tables[a][o], or the fill for -1.
func axisMap(in []int, tables [][]int) (shape []int, idx []int32) {
	shape = make([]int, len(tables))
	for a, t := range tables {
		shape[a] = len(t)
	}
	st := stridesOf(in)
	idx = make([]int32, numel(shape))
	pos := make([]int, len(shape))
	for i := range idx {
		src := 0
		for a, p := range pos {
			j := tables[a][p]
			if j < 0 || src < 0 {
				src = -1
				continue
			}
			src += j * st[a]
		}
		idx[i] = int32(src)
		for a := len(pos) - 1; a >= 0; a-- {
			if pos[a]++; pos[a] < shape[a] {
				break
			}
			pos[a] = 0
		}
	}
	return shape, idx
}

// window is the geometry of a convolution or pooling over the spatial
// axes: kernel size, stride, dilation, padding at the start and end, and
// the output size, per axis.
type window struct {
	kernel, strides, dilations, begin, end, out []int
}

// windowOf reads the window attributes of n for spatial input sizes
// spatial and kernel sizes kernel; ceil selects ceil_mode's rounding.
func windowOf(n *Node, spatial, kernel []int, ceil bool) (*window, error) {
	k := len(spatial)
	w := &window{kernel: kernel, strides: ones(k), dilations: ones(k), begin: make([]int, k), end: make([]int, k), out: make([]int, k)}
	for _, a := range []struct {
		name string
		dst  []int
		n    int
	}{{"strides", w.strides, k}, {"dilations", w.dilations, k}, {"pads", nil, 2 * k}} {
		v, ok, err := n.attrInts(a.name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if len(v) != a.n {
			return nil, attrErr("%s %v has %d values, want %d for %d spatial axes", a.name, v, len(v), a.n, k)
		}
		if a.dst == nil {
			for i := 0; i < k; i++ {
				w.begin[i], w.end[i] = int(v[i]), int(v[k+i])
			}
			continue
		}
		for i, x := range v {
			if x < 1 {
				return nil, attrErr("%s %v must be positive", a.name, v)
			}
			a.dst[i] = int(x)
		}
	}
	autoPad, err := n.attrString("auto_pad", "NOTSET")
	if err != nil {
		return nil, err
	}
	for i := 0; i < k; i++ {
		span := w.dilations[i]*(kernel[i]-1) + 1
		switch autoPad {
		case "NOTSET", "":
		case "VALID":
			w.begin[i], w.end[i] = 0, 0
		case "SAME_UPPER", "SAME_LOWER":
			out := (spatial[i] + w.strides[i] - 1) / w.strides[i]
			total := max(0, (out-1)*w.strides[i]+span-spatial[i])
			small, big := total/2, total-total/2
			if autoPad == "SAME_UPPER" {
				w.begin[i], w.end[i] = small, big
			} else {
				w.begin[i], w.end[i] = big, small
			}
		default:
			return nil, attrErr("auto_pad %q is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", autoPad)
		}
		if w.begin[i] < 0 || w.end[i] < 0 {
			return nil, attrErr("negative pads")
		}
		room := spatial[i] + w.begin[i] + w.end[i] - span
		if room < 0 {
			return nil, shapeErr("kernel of extent %d does not fit spatial axis %d of size %d with pads %d, %d", span, i, spatial[i], w.begin[i], w.end[i])
		}
		w.out[i] = room/w.strides[i] + 1
		if ceil && room%w.strides[i] != 0 {
			w.out[i]++
			// The last window must start inside the input or the
			// start padding (as ONNX Runtime and PyTorch).
			if (w.out[i]-1)*w.strides[i] >= spatial[i]+w.begin[i] {
				w.out[i]--
			}
		}
	}
	return w, nil
}

func ones(k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = 1
	}
	return s
}

// patches returns, for each output position p (row-major over w.out) and
// kernel offset r (row-major over w.kernel), the flat index into the
// spatial axes (of sizes spatial) of the element it takes, or -1 where the
// window is over padding; clamped is the same with the coordinates
// clamped into range instead (see mapFill); inPad reports whether the
// element is inside the padded input (for count_include_pad).
func (w *window) patches(spatial []int) (idx, clamped []int, inPad []bool) {
	P, K := numel(w.out), numel(w.kernel)
	idx = make([]int, P*K)
	clamped = make([]int, P*K)
	inPad = make([]bool, P*K)
	st := stridesOf(spatial)
	o := make([]int, len(w.out))
	q := make([]int, len(w.kernel))
	for p := 0; p < P; p++ {
		decode(p, w.out, o)
		for r := 0; r < K; r++ {
			decode(r, w.kernel, q)
			src, near, pad := 0, 0, true
			for a := range o {
				x := o[a]*w.strides[a] - w.begin[a] + q[a]*w.dilations[a]
				if x < -w.begin[a] || x >= spatial[a]+w.end[a] {
					pad = false
				}
				near += min(max(x, 0), spatial[a]-1) * st[a]
				if x < 0 || x >= spatial[a] || src < 0 {
					src = -1
					continue
				}
				src += x * st[a]
			}
			idx[p*K+r], clamped[p*K+r], inPad[p*K+r] = src, near, pad
		}
	}
	return idx, clamped, inPad
}

// decode writes the row-major multi-index of flat position i in shape.
func decode(i int, shape, pos []int) {
	for a := len(shape) - 1; a >= 0; a-- {
		pos[a] = i % shape[a]
		i /= shape[a]
	}
}

// windowMap gathers x [N, C, spatial...] into [N, C, P, K] (output
// positions by kernel offsets), -1 over padding, and the clamped map (see
// mapFill).
func (w *window) windowMap(d []int) (idx, near []int32) {
	spatial := d[2:]
	sp, cl, _ := w.patches(spatial)
	S, PK := numel(spatial), len(sp)
	idx = make([]int32, d[0]*d[1]*PK)
	near = make([]int32, len(idx))
	for nc := 0; nc < d[0]*d[1]; nc++ {
		for i, s := range sp {
			near[nc*PK+i] = int32(nc*S + cl[i])
			if s < 0 {
				idx[nc*PK+i] = -1
			} else {
				idx[nc*PK+i] = int32(nc*S + s)
			}
		}
	}
	return idx, near
}

// lowerConv: X [N, C, spatial...], W [M, C/group, kernel...], optional B
// [M]. The patches of each group, [N, G, P, C/G·K], are multiplied by the
// group's weights transposed, [G, C/G·K, M/G] (the bias added in the same
// kernel), and the result [N, G, P, M/G] is transposed to [N, M, out...].
func lowerConv(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "X", "W")
	if err != nil {
		return nil, err
	}
	x, wv := vs[0], vs[1]
	d, wd := x.dims(), wv.dims()
	if len(d) < 3 || len(wd) != len(d) {
		return nil, shapeErr("Conv of X %v and W %v: want X [N, C, D1, ...] and W [M, C/group, k1, ...] of the same rank", d, wd)
	}
	group, err := n.attrInt("group", 1)
	if err != nil {
		return nil, err
	}
	G, C, M := int(group), d[1], wd[0]
	if G < 1 || C%G != 0 || M%G != 0 || wd[1] != C/G {
		return nil, shapeErr("Conv with group %d: X has %d channels and W shape %v (want [M, C/group, ...] with M divisible by group)", group, C, wd)
	}
	kernel := append([]int(nil), wd[2:]...)
	if ks, ok, err := n.attrInts("kernel_shape"); err != nil {
		return nil, err
	} else if ok && !sameShape(toInts(ks), kernel) {
		return nil, attrErr("kernel_shape %v does not match W's shape %v", ks, wd)
	}
	w, err := windowOf(n, d[2:], kernel, false)
	if err != nil {
		return nil, err
	}
	N, Cg, Mg := d[0], C/G, M/G
	P, K := numel(w.out), numel(kernel)
	// [N, C, P, K] = [N, G, Cg, P, K] -> [N, G, P, Cg, K]
	pool, poolNear := w.windowMap(d)
	_, perm := transposeMap([]int{N, G, Cg, P, K}, []int{0, 1, 3, 2, 4})
	idx, near := make([]int32, len(perm)), make([]int32, len(perm))
	for i, j := range perm {
		idx[i], near[i] = pool[j], poolNear[j]
	}
	cols := c.mapFill(x, []int{N, G, P, Cg * K}, idx, near, 0)
	wt := c.transpose(c.view(wv, []int{G, Mg, Cg * K}), []int{0, 2, 1})
	if G == 1 {
		cols = c.view(cols, []int{N, P, Cg * K})
		wt = c.view(wt, []int{Cg * K, Mg})
	}
	var y *value
	if len(in) > 2 && in[2] != nil {
		b := in[2]
		if bd := b.dims(); len(bd) != 1 || bd[0] != M {
			return nil, shapeErr("Conv bias has shape %v, want [%d]", bd, M)
		}
		if G > 1 {
			b = c.view(b, []int{G, 1, Mg})
		}
		y, err = c.matmulAdd(cols, wt, b)
	} else {
		y, err = c.matmul(cols, wt)
	}
	if err != nil {
		return nil, err
	}
	y = c.transpose(c.view(y, []int{N, G, P, Mg}), []int{0, 1, 3, 2})
	return []*value{c.view(y, append([]int{N, M}, w.out...))}, nil
}

// lowerPool: AveragePool (count_include_pad) and MaxPool (Y only: the
// Indices output depends on the values) over windows.
func lowerPool(isMax bool) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		x, err := need(in, 0, "X")
		if err != nil {
			return nil, err
		}
		d := x.dims()
		if len(d) < 3 {
			return nil, shapeErr("%s input has shape %v, want [N, C, D1, ...]", n.OpType, d)
		}
		ks, ok, err := n.attrInts("kernel_shape")
		if err != nil {
			return nil, err
		}
		if !ok || len(ks) != len(d)-2 {
			return nil, attrErr("%s needs kernel_shape with one size per spatial axis (%d)", n.OpType, len(d)-2)
		}
		ceil, err := n.attrInt("ceil_mode", 0)
		if err != nil {
			return nil, err
		}
		if isMax && len(n.Outputs) > 1 && n.Outputs[1] != "" {
			return nil, fmt.Errorf("%w: MaxPool's Indices output depends on the values; only Y is supported", ErrUnsupportedOp)
		}
		w, err := windowOf(n, d[2:], toInts(ks), ceil != 0)
		if err != nil {
			return nil, err
		}
		N, C, P, K := d[0], d[1], numel(w.out), numel(w.kernel)
		fill, op := 0.0, reduceSum
		if isMax {
			fill, op = math.Inf(-1), reduceMax
		}
		idx, near := w.windowMap(d)
		pt := c.mapFill(x, []int{N, C, P, K}, idx, near, fill)
		y := c.reduce(pt, []bool{false, false, false, true}, op)
		if !isMax {
			include, err := n.attrInt("count_include_pad", 0)
			if err != nil {
				return nil, err
			}
			sp, _, inPad := w.patches(d[2:])
			inv := NewFloat([]int{P, 1}, nil)
			for p := range inv.F {
				cnt := 0
				for r := p * K; r < (p+1)*K; r++ {
					if sp[r] >= 0 || (include != 0 && inPad[r]) {
						cnt++
					}
				}
				inv.F[p] = 1 / float64(max(cnt, 1))
			}
			y = c.mustBinary(opMul, y, staticValue(inv))
		}
		return []*value{c.view(y, append([]int{N, C}, w.out...))}, nil
	}
}

func lowerGlobalPool(isMax bool) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		x, err := need(in, 0, "X")
		if err != nil {
			return nil, err
		}
		d := x.dims()
		if len(d) < 2 {
			return nil, shapeErr("%s input has shape %v, want [N, C, ...]", n.OpType, d)
		}
		red := make([]bool, len(d))
		for a := 2; a < len(d); a++ {
			red[a] = true
		}
		if isMax {
			return []*value{c.reduce(x, red, reduceMax)}, nil
		}
		return []*value{lowerReduceMean(c, x, c.reduce(x, red, reduceSum), red)}, nil
	}
}

// lowerPad: pads (and the constant value) are attributes before opset 11
// and inputs after; from opset 18 an axes input selects the axes. Negative
// pads crop.
func lowerPad(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "data")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	r := len(d)
	mode, err := n.attrString("mode", "constant")
	if err != nil {
		return nil, err
	}
	var pads []int64
	fill := 0.0
	var fillValue *value
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if c.g.Opset < 11 {
		p, _, err := n.attrInts("pads")
		if c.g.Opset < 2 {
			p, _, err = n.attrInts("paddings")
		}
		if err != nil {
			return nil, err
		}
		pads = p
		if fill, err = n.attrFloat("value", 0); err != nil {
			return nil, err
		}
	} else {
		if pads, err = staticInts(in[1], "pads"); err != nil {
			return nil, err
		}
		if len(in) > 2 && in[2] != nil {
			if numel(in[2].dims()) != 1 {
				return nil, shapeErr("Pad's constant_value has shape %v, want a scalar", in[2].dims())
			}
			fillValue = in[2]
		}
		if len(in) > 3 && in[3] != nil {
			ax, err := staticInts(in[3], "axes")
			if err != nil {
				return nil, err
			}
			axes = axes[:0]
			for _, a := range ax {
				na, err := normAxis(a, r)
				if err != nil {
					return nil, err
				}
				axes = append(axes, na)
			}
		}
	}
	k := len(axes)
	if len(pads) != 2*k {
		return nil, attrErr("pads %v has %d values, want %d", pads, len(pads), 2*k)
	}
	tables := make([][]int, r)
	edges := make([][]int, r) // the same with mode "edge", for mapFill's near
	for a := range tables {
		tables[a] = identityTable(d[a])
		edges[a] = tables[a]
	}
	for i, a := range axes {
		b, e := int(pads[i]), int(pads[k+i])
		size := d[a] + b + e
		if size < 0 {
			return nil, shapeErr("pads %v remove more than axis %d's %d elements", pads, a, d[a])
		}
		t := make([]int, size)
		edge := make([]int, size)
		for o := range t {
			j := o - b
			edge[o] = min(max(j, 0), d[a]-1)
			if j < 0 || j >= d[a] {
				switch mode {
				case "constant":
					j = -1
				case "edge":
					j = min(max(j, 0), d[a]-1)
				case "reflect":
					if d[a] == 1 {
						j = 0
						break
					}
					period := 2 * (d[a] - 1)
					j = ((j % period) + period) % period
					if j >= d[a] {
						j = period - j
					}
				case "wrap":
					j = ((j % d[a]) + d[a]) % d[a]
				default:
					return nil, attrErr("Pad mode %q is not constant, reflect, edge or wrap", mode)
				}
			}
			t[o] = j
		}
		tables[a], edges[a] = t, edge
	}
	shape, idx := axisMap(d, tables)
	_, near := axisMap(d, edges)
	if fillValue != nil && mode == "constant" {
		return []*value{c.mapFillValue(x, shape, idx, near, fillValue)}, nil
	}
	return []*value{c.mapFill(x, shape, idx, near, fill)}, nil
}

func identityTable(n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = i
	}
	return t
}

func lowerTile(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	reps, err := staticInts(in[1], "repeats")
	if err != nil {
		return nil, err
	}
	d := x.dims()
	if len(reps) != len(d) {
		return nil, shapeErr("Tile repeats %v has %d values for rank %d", reps, len(reps), len(d))
	}
	tables := make([][]int, len(d))
	for a, k := range reps {
		if k < 0 {
			return nil, attrErr("negative repeats %v", reps)
		}
		t := make([]int, d[a]*int(k))
		for o := range t {
			t[o] = o % d[a]
		}
		tables[a] = t
	}
	shape, idx := axisMap(d, tables)
	return []*value{c.mapFill(x, shape, idx, idx, 0)}, nil
}
