package graph

import (
	"fmt"
	"sort"
	"strings"
)

// Tensor operators lowered onto existing kernels: CumSum (a product with a
// constant triangular matrix), Einsum (transposes, reductions and one
// batched matrix product), GatherElements (an index map), OneHot
// (evaluated at compile time) and Trilu (an index map with zero fill).

// lowerCumSum sums along axis: the axis is moved last and the result is a
// product with the constant matrix T[i][j] = 1 when input position i
// counts towards output position j (i <= j; i < j when exclusive; the
// reverse with reverse set).
func lowerCumSum(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "x", "axis")
	if err != nil {
		return nil, err
	}
	x := vs[0]
	ai, err := staticInts(vs[1], "axis")
	if err != nil {
		return nil, err
	}
	if len(ai) != 1 {
		return nil, shapeErr("CumSum axis must be a scalar, got %v", ai)
	}
	exclusive, err := n.attrInt("exclusive", 0)
	if err != nil {
		return nil, err
	}
	reverse, err := n.attrInt("reverse", 0)
	if err != nil {
		return nil, err
	}
	d := x.dims()
	ax, err := normAxis(ai[0], len(d))
	if err != nil {
		return nil, err
	}
	m := d[ax]
	counts := func(i, j int) bool {
		if reverse != 0 {
			i, j = j, i
		}
		return i < j || (i == j && exclusive == 0)
	}
	if x.isStatic() && x.t.DType == Int {
		out := NewInt(d, nil)
		outer, inner := numel(d[:ax]), numel(d[ax+1:])
		for o := 0; o < outer; o++ {
			for k := 0; k < inner; k++ {
				for j := 0; j < m; j++ {
					var s int64
					for i := 0; i < m; i++ {
						if counts(i, j) {
							s += x.t.I[(o*m+i)*inner+k]
						}
					}
					out.I[(o*m+j)*inner+k] = s
				}
			}
		}
		return []*value{staticValue(out)}, nil
	}
	tri := NewFloat([]int{m, m}, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			if counts(i, j) {
				tri.F[i*m+j] = 1
			}
		}
	}
	perm := make([]int, 0, len(d))
	for a := range d {
		if a != ax {
			perm = append(perm, a)
		}
	}
	perm = append(perm, ax)
	y, err := c.matmul(c.transpose(x, perm), staticValue(tri))
	if err != nil {
		return nil, err
	}
	back := make([]int, len(d))
	for i, p := range perm {
		back[p] = i
	}
	return []*value{c.transpose(y, back)}, nil
}

// einsumTerm is one operand's subscripts: a letter per axis.
type einsumTerm []byte

// parseEinsum splits an equation into its input terms and output term
// (implicit output: the letters used once, in alphabetical order).
// Ellipses and repeated letters within a term (diagonals) are not
// supported.
func parseEinsum(eq string, nin int) ([]einsumTerm, einsumTerm, error) {
	eq = strings.ReplaceAll(eq, " ", "")
	if strings.Contains(eq, ".") {
		return nil, nil, attrErr("Einsum equation %q: ellipses are not supported", eq)
	}
	lhs, rhs, explicit := strings.Cut(eq, "->")
	parts := strings.Split(lhs, ",")
	if len(parts) != nin {
		return nil, nil, attrErr("Einsum equation %q has %d operands, the node %d inputs", eq, len(parts), nin)
	}
	count := map[byte]int{}
	terms := make([]einsumTerm, len(parts))
	for i, p := range parts {
		seen := map[byte]bool{}
		for j := 0; j < len(p); j++ {
			l := p[j]
			if !(l >= 'a' && l <= 'z' || l >= 'A' && l <= 'Z') {
				return nil, nil, attrErr("Einsum equation %q: %q is not a subscript letter", eq, l)
			}
			if seen[l] {
				return nil, nil, attrErr("Einsum equation %q: repeated subscript %q in one operand (a diagonal) is not supported", eq, l)
			}
			seen[l] = true
			count[l]++
		}
		terms[i] = einsumTerm(p)
	}
	var out einsumTerm
	if explicit {
		out = einsumTerm(rhs)
		seen := map[byte]bool{}
		for _, l := range out {
			if count[l] == 0 || seen[l] {
				return nil, nil, attrErr("Einsum equation %q: output subscript %q is repeated or not in any input", eq, l)
			}
			seen[l] = true
		}
	} else {
		for l, k := range count {
			if k == 1 {
				out = append(out, l)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	}
	return terms, out, nil
}

func (t einsumTerm) has(l byte) bool { return strings.IndexByte(string(t), l) >= 0 }

// lowerEinsum lowers one- and two-operand equations: letters of one
// operand that appear nowhere else are summed out first; two operands are
// then transposed to [batch, free, contracted] and [batch, contracted,
// free] and multiplied; the result is transposed to the output's order.
func lowerEinsum(c *compiler, n *Node, in []*value) ([]*value, error) {
	eq, err := n.attrString("equation", "")
	if err != nil {
		return nil, err
	}
	var ops []*value
	for _, v := range in {
		if v != nil {
			ops = append(ops, v)
		}
	}
	if len(ops) < 1 || len(ops) > 2 {
		return nil, fmt.Errorf("%w: Einsum with %d operands; one or two are supported", ErrUnsupportedOp, len(ops))
	}
	terms, out, err := parseEinsum(eq, len(ops))
	if err != nil {
		return nil, err
	}
	size := map[byte]int{}
	for i, t := range terms {
		d := ops[i].dims()
		if len(d) != len(t) {
			return nil, shapeErr("Einsum operand %d has shape %v for subscripts %q", i, d, t)
		}
		for j, l := range t {
			if s, ok := size[l]; ok && s != d[j] {
				return nil, shapeErr("Einsum subscript %q has sizes %d and %d", l, s, d[j])
			}
			size[l] = d[j]
		}
	}
	// Sum out the letters only one operand has and the output lacks.
	for i, t := range terms {
		red := make([]bool, len(t))
		var kept einsumTerm
		any := false
		for j, l := range t {
			other := len(terms) == 2 && terms[1-i].has(l)
			if !other && !out.has(l) {
				red[j], any = true, true
			} else {
				kept = append(kept, l)
			}
		}
		if any {
			ops[i] = c.dropReduced(c.reduce(ops[i], red, reduceSum), red)
			terms[i] = kept
		}
	}
	order := func(t einsumTerm, letters ...einsumTerm) []int {
		var perm []int
		for _, group := range letters {
			for _, l := range group {
				perm = append(perm, strings.IndexByte(string(t), l))
			}
		}
		return perm
	}
	sizes := func(t einsumTerm) []int {
		s := make([]int, len(t))
		for i, l := range t {
			s[i] = size[l]
		}
		return s
	}
	if len(ops) == 1 {
		return []*value{c.transpose(ops[0], order(terms[0], out))}, nil
	}
	a, b := terms[0], terms[1]
	var batch, freeA, freeB, contract einsumTerm
	for _, l := range a {
		switch {
		case b.has(l) && out.has(l):
			batch = append(batch, l)
		case b.has(l):
			contract = append(contract, l)
		default:
			freeA = append(freeA, l)
		}
	}
	for _, l := range b {
		if !a.has(l) {
			freeB = append(freeB, l)
		}
	}
	B, M, K, N := numel(sizes(batch)), numel(sizes(freeA)), numel(sizes(contract)), numel(sizes(freeB))
	av := c.transpose(ops[0], order(a, batch, freeA, contract))
	bv := c.transpose(ops[1], order(b, batch, contract, freeB))
	if len(batch) == 0 {
		av, bv = c.view(av, []int{M, K}), c.view(bv, []int{K, N})
	} else {
		av, bv = c.view(av, []int{B, M, K}), c.view(bv, []int{B, K, N})
	}
	y, err := c.matmul(av, bv)
	if err != nil {
		return nil, err
	}
	res := append(append(append(einsumTerm{}, batch...), freeA...), freeB...)
	y = c.view(y, sizes(res))
	return []*value{c.transpose(y, order(res, out))}, nil
}

// lowerGatherElements: out[i] = data[i with its axis coordinate replaced
// by indices[i]], indices known at compile time.
func lowerGatherElements(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "data", "indices")
	if err != nil {
		return nil, err
	}
	x, iv := vs[0], vs[1]
	idx, err := staticInts(iv, "indices")
	if err != nil {
		return nil, err
	}
	axis, err := n.attrInt("axis", 0)
	if err != nil {
		return nil, err
	}
	d, id := x.dims(), iv.dims()
	ax, err := normAxis(axis, len(d))
	if err != nil {
		return nil, err
	}
	if len(id) != len(d) {
		return nil, shapeErr("GatherElements indices of shape %v for data of shape %v: ranks differ", id, d)
	}
	for a := range d {
		if a != ax && id[a] > d[a] {
			return nil, shapeErr("GatherElements indices of shape %v exceed data of shape %v on axis %d", id, d, a)
		}
	}
	st := stridesOf(d)
	pos := make([]int, len(id))
	m := make([]int32, len(idx))
	for i, k := range idx {
		decode(i, id, pos)
		if k < 0 {
			k += int64(d[ax])
		}
		if k < 0 || k >= int64(d[ax]) {
			return nil, shapeErr("GatherElements index %d out of range for axis %d of size %d", idx[i], ax, d[ax])
		}
		pos[ax] = int(k)
		src := 0
		for a, p := range pos {
			src += p * st[a]
		}
		m[i] = int32(src)
	}
	return []*value{c.emit(&mapK{idx: m}, id, x)}, nil
}

// lowerOneHot evaluates OneHot at compile time: indices, depth and values
// must be known before the model runs.
func lowerOneHot(c *compiler, n *Node, in []*value) ([]*value, error) {
	ts, err := staticInputs(n, in)
	if err != nil {
		return nil, err
	}
	if len(ts) != 3 || ts[0] == nil || ts[1] == nil || ts[2] == nil || ts[1].Len() != 1 || ts[2].Len() != 2 {
		return nil, fmt.Errorf("%w: OneHot needs indices, a scalar depth and two values", ErrInput)
	}
	idx, values := ts[0], ts[2]
	depth := int(ts[1].Float64s()[0])
	if depth < 1 {
		return nil, shapeErr("OneHot depth %d", depth)
	}
	axis, err := n.attrInt("axis", -1)
	if err != nil {
		return nil, err
	}
	r := idx.Rank() + 1
	ax, err := normAxis(axis, r)
	if err != nil {
		return nil, err
	}
	shape := append(append(append([]int(nil), idx.Shape[:ax]...), depth), idx.Shape[ax:]...)
	vals := values.Float64s()
	out := make([]float64, numel(shape))
	outer, inner := numel(idx.Shape[:ax]), numel(idx.Shape[ax:])
	iv := idx.Int64s()
	for o := 0; o < outer; o++ {
		for j := 0; j < inner; j++ {
			k := iv[o*inner+j]
			if k < 0 {
				k += int64(depth)
			}
			for p := 0; p < depth; p++ {
				v := vals[0]
				if int64(p) == k {
					v = vals[1]
				}
				out[(o*depth+p)*inner+j] = v
			}
		}
	}
	return []*value{staticValue(like(values, shape, out))}, nil
}

// lowerTrilu keeps the upper (upper = 1, the default) or lower triangle of
// the last two axes of x, from diagonal k (input 1, a static scalar,
// default 0): element (i, j) is kept when j - i >= k (upper) or
// j - i <= k (lower) and is 0 otherwise. It is an index map with zero
// fill rather than a product with a 0/1 mask, so that the entries it
// drops may be infinite: torch's causal mask is Trilu of a tensor of
// -inf, whose dropped entries must be 0, not -inf * 0 = NaN. The map is
// linear, so its derivative rules are those of the map (padK).
func lowerTrilu(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	var k int64
	if len(in) > 1 && in[1] != nil {
		ks, err := staticInts(in[1], "k")
		if err != nil {
			return nil, err
		}
		if len(ks) != 1 {
			return nil, shapeErr("Trilu k must be a scalar, got %d values", len(ks))
		}
		k = ks[0]
	}
	upper, err := n.attrInt("upper", 1)
	if err != nil {
		return nil, err
	}
	d := x.dims()
	if len(d) < 2 {
		return nil, shapeErr("Trilu of rank %d: it takes a tensor of rank 2 or more", len(d))
	}
	rows, cols := d[len(d)-2], d[len(d)-1]
	idx := make([]int32, numel(d))
	near := make([]int32, len(idx))
	for o := range idx {
		i, j := int64(o/cols%rows), int64(o%cols)
		keep := j-i >= k
		if upper == 0 {
			keep = j-i <= k
		}
		idx[o], near[o] = int32(o), int32(o)
		if !keep {
			idx[o] = -1
		}
	}
	return []*value{c.mapFill(x, d, idx, near, 0)}, nil
}
