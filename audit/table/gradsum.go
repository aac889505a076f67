package table

import (
	"fmt"
	"math"
)

// GradientSum is the exact sum of vectors of P floats: per coordinate,
// Shewchuk's non-overlapping partials (the algorithm of Python's
// math.fsum), rounded once, to nearest, by Round. Its value does not
// depend on the order in which vectors are added or sums merged, so the
// block pass's total gradient (the sum of its chunks' gradient sums) is
// the same bits whether the chunks are folded in process, in any order,
// or pre-summed on an engine's workers and merged there in whatever
// order the engine combines (cmd/audit-beam's combiner). Non-finite
// values are summed apart, plainly (Inf and NaN propagate as in a plain
// sum); a partial that overflows joins them.
//
// The zero value is not usable: make one with NewGradientSum.
type GradientSum struct {
	p int
	// Coordinate i's partials, increasing in magnitude: the first n[i]
	// of slots[i*gradSlots:], or more[i] when they outgrew the slots
	// (n[i] == gradSpilled).
	slots   []float64
	n       []uint8
	more    map[int][]float64
	special []float64 // per coordinate the sum of the non-finite values, nil until one
}

const (
	gradSlots   = 4
	gradSpilled = 255
)

// NewGradientSum returns the zero sum of vectors of P floats.
func NewGradientSum(P int) *GradientSum {
	return &GradientSum{p: P, slots: make([]float64, gradSlots*P), n: make([]uint8, P)}
}

// P is the length of the vectors summed.
func (s *GradientSum) P() int { return s.p }

// Add adds v, one or more vectors of P floats one after the other, to
// the sum.
func (s *GradientSum) Add(v []float64) error {
	if s.p == 0 && len(v) == 0 {
		return nil
	}
	if s.p == 0 || len(v)%s.p != 0 {
		return fmt.Errorf("audit: a gradient sum of vectors of %d floats given %d floats", s.p, len(v))
	}
	for off := 0; off < len(v); off += s.p {
		for i, x := range v[off : off+s.p] {
			s.add(i, x)
		}
	}
	return nil
}

// add adds x to coordinate i: msum, each partial with x by two-sum
// (Knuth's, which needs no ordering), keeping the non-zero round-off
// errors, then x's remainder on top.
func (s *GradientSum) add(i int, x float64) {
	if x == 0 {
		return
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		s.addSpecial(i, x)
		return
	}
	if s.n[i] == gradSpilled {
		s.addMore(i, x)
		return
	}
	ps := s.slots[i*gradSlots : i*gradSlots+gradSlots : i*gradSlots+gradSlots]
	m := int(s.n[i])
	k := 0
	for j := 0; j < m; j++ {
		y := ps[j]
		hi := x + y
		bp := hi - x
		lo := (x - (hi - bp)) + (y - bp)
		ps[k] = lo
		if lo != 0 {
			k++
		}
		x = hi
	}
	switch {
	case math.IsInf(x, 0):
		// Overflow: the finite partials no longer matter.
		s.n[i] = 0
		s.addSpecial(i, x)
	case x == 0:
		s.n[i] = uint8(k)
	case k < gradSlots:
		ps[k] = x
		s.n[i] = uint8(k + 1)
	default:
		// Five partials: compress them (their value is kept exactly);
		// they rarely need more than two.
		var e [gradSlots + 1]float64
		copy(e[:], ps)
		e[gradSlots] = x
		c := compress(e[:])
		if len(c) <= gradSlots {
			copy(ps, c)
			s.n[i] = uint8(len(c))
			return
		}
		if s.more == nil {
			s.more = map[int][]float64{}
		}
		s.more[i] = append([]float64(nil), c...)
		s.n[i] = gradSpilled
	}
}

// compress rewrites the non-overlapping partials e (increasing in
// magnitude) in place as an equal sum of fewer ones, non-adjacent and
// increasing, and returns them (Shewchuk's Compress, with two-sums).
func compress(e []float64) []float64 {
	m := len(e)
	bottom := m - 1
	q := e[bottom]
	for i := m - 2; i >= 0; i-- {
		hi, lo := twoSum(q, e[i])
		if lo != 0 {
			e[bottom] = hi
			bottom--
			q = lo
		} else {
			q = hi
		}
	}
	e[bottom] = q
	top := 0
	for i := bottom + 1; i < m; i++ {
		hi, lo := twoSum(e[i], q)
		if lo != 0 {
			e[top] = lo
			top++
		}
		q = hi
	}
	e[top] = q
	return e[:top+1]
}

// twoSum returns a + b rounded and its round-off error, exactly (Knuth).
func twoSum(a, b float64) (hi, lo float64) {
	hi = a + b
	bp := hi - a
	return hi, (a - (hi - bp)) + (b - bp)
}

// addMore is add for a coordinate whose partials outgrew the slots.
func (s *GradientSum) addMore(i int, x float64) {
	ps := s.more[i]
	k := 0
	for _, y := range ps {
		hi := x + y
		bp := hi - x
		lo := (x - (hi - bp)) + (y - bp)
		if lo != 0 {
			ps[k] = lo
			k++
		}
		x = hi
	}
	ps = ps[:k]
	if math.IsInf(x, 0) {
		s.more[i] = ps[:0]
		s.addSpecial(i, x)
		return
	}
	if x != 0 {
		ps = append(ps, x)
	}
	s.more[i] = ps
}

// partials are coordinate i's partials.
func (s *GradientSum) partials(i int) []float64 {
	if s.n[i] == gradSpilled {
		return s.more[i]
	}
	return s.slots[i*gradSlots : i*gradSlots+int(s.n[i])]
}

func (s *GradientSum) addSpecial(i int, x float64) {
	if s.special == nil {
		s.special = make([]float64, s.p)
	}
	s.special[i] += x
}

// Merge adds the sum o to s.
func (s *GradientSum) Merge(o *GradientSum) error {
	if o.p != s.p {
		return fmt.Errorf("audit: merging a gradient sum of %d floats into one of %d", o.p, s.p)
	}
	for i := range o.p {
		for _, x := range o.partials(i) {
			s.add(i, x)
		}
	}
	for i, x := range o.special {
		if x != 0 {
			s.addSpecial(i, x)
		}
	}
	return nil
}

// Vectors returns vectors of P floats, one after the other, whose exact
// sum is s: the partials, the j-th vector holding every coordinate's
// j-th (zero where it has fewer), then the non-finite sums if any. It is
// nil for the zero sum. Adding them to a GradientSum adds s exactly.
func (s *GradientSum) Vectors() []float64 {
	m := 0
	for i := range s.p {
		m = max(m, len(s.partials(i)))
	}
	nv := m
	if s.special != nil {
		nv++
	}
	if nv == 0 {
		return nil
	}
	out := make([]float64, nv*s.p)
	for i := range s.p {
		for j, x := range s.partials(i) {
			out[j*s.p+i] = x
		}
	}
	if s.special != nil {
		copy(out[m*s.p:], s.special)
	}
	return out
}

// Round returns the sum rounded to the nearest floats (ties to even),
// in dst when it has room.
func (s *GradientSum) Round(dst []float64) []float64 {
	if cap(dst) < s.p {
		dst = make([]float64, s.p)
	}
	dst = dst[:s.p]
	for i := range s.p {
		if s.special != nil && s.special[i] != 0 {
			dst[i] = s.special[i]
			continue
		}
		dst[i] = roundPartials(s.partials(i))
	}
	return dst
}

// roundPartials is the sum of non-overlapping partials in increasing
// magnitude, correctly rounded (math_fsum's last step in CPython: add
// from the top until a round-off error appears, then correct a tie
// that the partials below break).
func roundPartials(ps []float64) float64 {
	n := len(ps)
	if n == 0 {
		return 0
	}
	n--
	hi := ps[n]
	lo := 0.0
	for n > 0 {
		x := hi
		n--
		y := ps[n]
		hi = x + y
		yr := hi - x
		lo = y - yr
		if lo != 0 {
			break
		}
	}
	if n > 0 && ((lo < 0 && ps[n-1] < 0) || (lo > 0 && ps[n-1] > 0)) {
		y := lo * 2
		x := hi + y
		if yr := x - hi; y == yr {
			hi = x
		}
	}
	return hi
}

func (s *GradientSum) fields(w *wire) {
	P := s.p
	w.i(&P)
	v := s.Vectors()
	w.fs(&v)
	if w.read {
		*s = *NewGradientSum(P)
		if w.err == nil {
			if err := s.Add(v); err != nil {
				w.err = err
			}
		}
	}
}

// MarshalBinary encodes s: P and Vectors.
func (s *GradientSum) MarshalBinary() ([]byte, error) { return marshal(kindGradientSum, s.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into s.
func (s *GradientSum) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindGradientSum, "a gradient sum", s.fields)
}

// TakeBlockGradient returns a block chunk's encoded output (a Runner's,
// StageBlocks) without its gradient vectors, and those vectors:
// an engine may sum them apart from the records, on its workers
// (GradientSum), and give the sum's Vectors back with any one chunk's
// output (PutBlockGradient). The driver adds every output's vectors to
// one GradientSum, so only their exact sum matters.
func TakeBlockGradient(out []byte) (rest []byte, grad []float64, err error) {
	o := &BlockChunkOut{}
	if err := o.UnmarshalBinary(out); err != nil {
		return nil, nil, err
	}
	grad, o.Total = o.Total, nil
	rest, err = o.MarshalBinary()
	return rest, grad, err
}

// PutBlockGradient returns the block chunk's encoded output rest with
// the gradient vectors grad (one or more vectors of P floats) in place
// of its own.
func PutBlockGradient(rest []byte, grad []float64) ([]byte, error) {
	o := &BlockChunkOut{}
	if err := o.UnmarshalBinary(rest); err != nil {
		return nil, err
	}
	o.Total = grad
	return o.MarshalBinary()
}
