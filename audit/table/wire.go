package table

// The raw little-endian encoding of the stages' values (stage.go):
// every number as 8 bytes (float64 by its IEEE bits, so that a value
// decodes to the same float), slices as a count then their elements. No
// reflection and no schema: a type lists its fields once, in order, in a
// fields method that both MarshalBinary and UnmarshalBinary run through a
// wire, so that the two directions cannot drift apart.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// wireMagic begins every encoded value, with its kind, so that a chunk
// given to the wrong stage is an error, not a misread.
const wireMagic = 0x72_6e_6e_61_75_64_69_74 // "rnnaudit"

// wire writes the fields it is given to b or, when reading, reads them
// from b into the places it is given. In reading, the first error sticks
// and every later read gives zero values.
type wire struct {
	read bool
	b    []byte
	err  error
}

// marshal encodes a value of the kind whose fields method is fields.
func marshal(kind uint64, fields func(*wire)) ([]byte, error) {
	w := &wire{}
	w.u(wireMagic)
	w.u(kind)
	fields(w)
	return w.b, nil
}

// unmarshal checks the magic number and the kind of b, then decodes b
// with fields; what names the value in errors.
func unmarshal(b []byte, kind uint64, what string, fields func(*wire)) error {
	w := &wire{read: true, b: b}
	if m := w.u(wireMagic); w.err == nil && m != wireMagic {
		w.err = fmt.Errorf("not an encoded audit value (%d bytes)", len(b))
	}
	if k := w.u(kind); w.err == nil && k != kind {
		w.err = fmt.Errorf("an encoded value of kind %d, want %d", k, kind)
	}
	if w.err == nil {
		fields(w)
	}
	if w.err != nil {
		return fmt.Errorf("audit: decoding %s: %w", what, w.err)
	}
	if len(w.b) != 0 {
		return fmt.Errorf("audit: decoding %s: %d bytes left over", what, len(w.b))
	}
	return nil
}

var errShort = errors.New("an encoded value ends early")

// u writes v, or reads and returns the next number.
func (w *wire) u(v uint64) uint64 {
	if !w.read {
		w.b = binary.LittleEndian.AppendUint64(w.b, v)
		return v
	}
	if w.err != nil {
		return 0
	}
	if len(w.b) < 8 {
		w.err = errShort
		return 0
	}
	v = binary.LittleEndian.Uint64(w.b)
	w.b = w.b[8:]
	return v
}

func (w *wire) i(vs ...*int) {
	for _, v := range vs {
		*v = int(int64(w.u(uint64(int64(*v)))))
	}
}

func (w *wire) f(vs ...*float64) {
	for _, v := range vs {
		*v = math.Float64frombits(w.u(math.Float64bits(*v)))
	}
}

func (w *wire) bool(vs ...*bool) {
	for _, v := range vs {
		var n uint64
		if *v {
			n = 1
		}
		*v = w.u(n) != 0
	}
}

// raw writes or reads len(v) bytes as they are.
func (w *wire) raw(v []byte) {
	switch {
	case !w.read:
		w.b = append(w.b, v...)
	case w.err != nil:
	case len(w.b) < len(v):
		w.err = errShort
	default:
		w.b = w.b[copy(v, w.b):]
	}
}

// n writes the count n, or reads a count of elements of size bytes each,
// checked against what is left, so that a corrupt count cannot allocate
// without bound.
func (w *wire) n(n, size int) int {
	w.i(&n)
	if w.read && w.err == nil && (n < 0 || n*size > len(w.b)) {
		w.err = fmt.Errorf("an encoded count %d exceeds the %d bytes left", n, len(w.b))
	}
	if w.err != nil {
		return 0
	}
	return n
}

func (w *wire) str(s *string) {
	n := w.n(len(*s), 1)
	if !w.read {
		w.b = append(w.b, *s...)
		return
	}
	*s = string(w.b[:n])
	w.b = w.b[n:]
}

// list writes or reads the count of *v, then its elements with f, each
// at least size bytes; in reading, *v is made anew.
func list[T any](w *wire, v *[]T, size int, f func(*T)) {
	n := w.n(len(*v), size)
	if w.read {
		*v = make([]T, n)
	}
	for j := range *v {
		f(&(*v)[j])
	}
}

func (w *wire) fs(vs ...*[]float64) {
	for _, v := range vs {
		list(w, v, 8, func(x *float64) { w.f(x) })
	}
}

func (w *wire) is(vs ...*[]int) {
	for _, v := range vs {
		list(w, v, 8, func(x *int) { w.i(x) })
	}
}

func (w *wire) bools(v *[]bool)         { list(w, v, 8, func(x *bool) { w.bool(x) }) }
func (w *wire) fss(v *[][]float64)      { list(w, v, 8, func(x *[]float64) { w.fs(x) }) }
func (w *wire) points(v *[]PointRecord) { list(w, v, 56, pointFields(w)) }

// The kinds of encoded values.
const (
	kindFactor = iota + 1
	kindBlockChunk
	kindBlockChunkOut
	kindPointChunk
	kindPoints
	kindTable
	kindFinalizeChunk
	kindLimits
	kindGradientSum
)

func (f *FactorSpec) fields(w *wire) {
	w.i(&f.P)
	w.fs(&f.U, &f.Reduced.D)
	w.f(&f.Reduced.Inv)
	loss := int(f.Loss)
	w.i(&loss)
	f.Loss = hvp.Loss(loss)
	list(w, &f.Slots, 16, func(s *[2]int) { w.i(&s[0], &s[1]) })
	w.bool(&f.WithRows, &f.Newton)
	w.raw(f.Problem[:])
}

// MarshalBinary encodes f.
func (f *FactorSpec) MarshalBinary() ([]byte, error) { return marshal(kindFactor, f.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into f, which must
// be new.
func (f *FactorSpec) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindFactor, "a factor", f.fields)
}

func (c *BlockChunk) fields(w *wire) {
	w.is(&c.Seqs, &c.Blocks)
	list(w, &c.Labels, 8, w.str)
	list(w, &c.Terms, 8, func(ts *[]Term) {
		list(w, ts, 48, func(t *Term) {
			w.i(&t.T, &t.H)
			w.f(&t.Y, &t.FX, &t.W)
			w.i(&t.Forecast)
		})
	})
}

// MarshalBinary encodes c.
func (c *BlockChunk) MarshalBinary() ([]byte, error) { return marshal(kindBlockChunk, c.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into c.
func (c *BlockChunk) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindBlockChunk, "a block chunk", c.fields)
}

func (o *BlockChunkOut) fields(w *wire) {
	list(w, &o.Recs, 24, func(r *BlockRecord) { w.fs(&r.A, &r.S, &r.Res) })
	w.fs(&o.GNorm, &o.Norms, &o.Shift)
	withRows := o.Lev != nil
	if w.bool(&withRows); withRows {
		w.fss(&o.Lev)
		w.fs(&o.LevMax)
		w.bools(&o.Unbounded)
	}
	w.fs(&o.Total)
}

// MarshalBinary encodes o.
func (o *BlockChunkOut) MarshalBinary() ([]byte, error) { return marshal(kindBlockChunkOut, o.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into o.
func (o *BlockChunkOut) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindBlockChunkOut, "a block chunk's output", o.fields)
}

func (c *PointChunk) fields(w *wire) {
	w.bool(&c.Cal)
	w.is(&c.Seqs)
	list(w, &c.Points, 56, func(p *ChunkPoint) {
		w.i(&p.Seq, &p.Forecast)
		w.f(&p.F)
		w.i(&p.Slot, &p.Skip)
		w.f(&p.Y)
		w.bool(&p.Labelled)
	})
}

// MarshalBinary encodes c.
func (c *PointChunk) MarshalBinary() ([]byte, error) { return marshal(kindPointChunk, c.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into c.
func (c *PointChunk) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindPointChunk, "a point chunk", c.fields)
}

// pointFields lists a PointRecord's fields.
func pointFields(w *wire) func(*PointRecord) {
	return func(p *PointRecord) {
		w.f(&p.F)
		w.i(&p.Forecast, &p.Skip)
		w.f(&p.Y)
		w.bool(&p.Labelled)
		w.fs(&p.G, &p.H)
	}
}

// EncodePoints encodes the output of a point chunk.
func EncodePoints(pts []PointRecord) []byte {
	b, _ := marshal(kindPoints, func(w *wire) { w.points(&pts) })
	return b
}

// DecodePoints decodes what EncodePoints encoded.
func DecodePoints(b []byte) ([]PointRecord, error) {
	var pts []PointRecord
	err := unmarshal(b, kindPoints, "point records", func(w *wire) { w.points(&pts) })
	return pts, err
}

func (t *TableSpec) fields(w *wire) {
	w.f(&t.Alpha)
	w.fs(&t.Alphas)
	bt := &t.Table
	w.i(&bt.N, &bt.K, &bt.KS, &bt.F)
	w.fs(&bt.Coef, &bt.Res)
}

// MarshalBinary encodes t.
func (t *TableSpec) MarshalBinary() ([]byte, error) { return marshal(kindTable, t.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into t, checking
// the table's dimensions.
func (t *TableSpec) UnmarshalBinary(b []byte) error {
	if err := unmarshal(b, kindTable, "a block table", t.fields); err != nil {
		return err
	}
	bt := &t.Table
	if bt.N < 0 || bt.K < 0 || bt.KS < 0 || bt.F < 0 || len(bt.Coef) != bt.N*(bt.K+bt.KS) || len(bt.Res) != bt.N*bt.F {
		return fmt.Errorf("audit: decoding a block table: %d blocks of %d+%d coefficients and %d residuals in %d and %d floats", bt.N, bt.K, bt.KS, bt.F, len(bt.Coef), len(bt.Res))
	}
	return nil
}

func (c *FinalizeChunk) fields(w *wire) { w.points(&c.Points) }

// MarshalBinary encodes c.
func (c *FinalizeChunk) MarshalBinary() ([]byte, error) { return marshal(kindFinalizeChunk, c.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into c.
func (c *FinalizeChunk) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindFinalizeChunk, "a finalize chunk", c.fields)
}

func (l *ChunkLimits) fields(w *wire) {
	w.fs(&l.Lo, &l.Up)
	w.is(&l.M, &l.Covered)
	w.i(&l.Labelled)
}

// MarshalBinary encodes l.
func (l *ChunkLimits) MarshalBinary() ([]byte, error) { return marshal(kindLimits, l.fields) }

// UnmarshalBinary decodes what MarshalBinary encoded into l.
func (l *ChunkLimits) UnmarshalBinary(b []byte) error {
	return unmarshal(b, kindLimits, "a chunk's limits", l.fields)
}
