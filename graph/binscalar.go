package graph

// scalarRange is forwardRange for a sum or product of a one-element
// operand (a bias, as in an output head's Add run once per forward pass)
// and an unbroadcast one, without the index map; it reports whether it
// applied. The operands stay in their order, so the bits are those of
// the general loop.
func (k *binK) scalarRange(a, b, c []float64, lo, hi int) bool {
	if k.op != opAdd && k.op != opMul {
		return false
	}
	var (
		s      float64
		v      []float64
		sFirst bool
	)
	switch {
	case len(a) == 1 && k.ib == nil:
		s, v, sFirst = a[0], b, true
	case len(b) == 1 && k.ia == nil:
		s, v = b[0], a
	default:
		return false
	}
	c = c[lo:hi]
	v = v[lo:hi]
	v = v[:len(c)]
	switch {
	case k.op == opAdd && sFirst:
		for i, x := range v {
			c[i] = s + x
		}
	case k.op == opAdd:
		for i, x := range v {
			c[i] = x + s
		}
	case sFirst:
		for i, x := range v {
			c[i] = s * x
		}
	default:
		for i, x := range v {
			c[i] = x * s
		}
	}
	return true
}
