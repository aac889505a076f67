package audit

// The raw little-endian encoding of the engine seam's values (engine.go):
// every number as 8 bytes (float64 by its IEEE bits, so that a value
// decodes to the same float), slices as a count then their elements. No
// reflection and no schema: what a record holds is what its Marshal
// method writes, in order.

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

// enc appends values to a buffer.
type enc struct{ b []byte }

func newEnc(kind uint64) *enc {
	e := &enc{}
	e.u(wireMagic)
	e.u(kind)
	return e
}

func (e *enc) u(v uint64)  { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) i(v int)     { e.u(uint64(int64(v))) }
func (e *enc) f(v float64) { e.u(math.Float64bits(v)) }
func (e *enc) bool(v bool) {
	if v {
		e.i(1)
	} else {
		e.i(0)
	}
}
func (e *enc) str(s string)      { e.i(len(s)); e.b = append(e.b, s...) }
func (e *enc) fs(v []float64)    { putList(e, v, e.f) }
func (e *enc) is(v []int)        { putList(e, v, e.i) }
func (e *enc) bools(v []bool)    { putList(e, v, e.bool) }
func (e *enc) fss(v [][]float64) { putList(e, v, e.fs) }

// putList writes the count of v, then its elements with f.
func putList[T any](e *enc, v []T, f func(T)) {
	e.i(len(v))
	for _, x := range v {
		f(x)
	}
}

// dec reads values back; the first error sticks and every later read
// returns zero values.
type dec struct {
	b   []byte
	err error
}

// newDec checks the magic number and the kind of b.
func newDec(b []byte, kind uint64) *dec {
	d := &dec{b: b}
	if m := d.u(); d.err == nil && m != wireMagic {
		d.err = fmt.Errorf("not an encoded audit value (%d bytes)", len(b))
	}
	if k := d.u(); d.err == nil && k != kind {
		d.err = fmt.Errorf("an encoded value of kind %d, want %d", k, kind)
	}
	return d
}

var errShort = errors.New("an encoded value ends early")

func (d *dec) u() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.err = errShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) i() int     { return int(int64(d.u())) }
func (d *dec) f() float64 { return math.Float64frombits(d.u()) }
func (d *dec) bool() bool { return d.i() != 0 }

// n reads a count of elements of size bytes each, checked against what
// is left, so that a corrupt count cannot allocate without bound.
func (d *dec) n(size int) int {
	n := d.i()
	if d.err == nil && (n < 0 || n*size > len(d.b)) {
		d.err = fmt.Errorf("an encoded count %d exceeds the %d bytes left", n, len(d.b))
	}
	if d.err != nil {
		return 0
	}
	return n
}

func (d *dec) str() string {
	n := d.n(1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// list reads a count, then that many elements with f, each at least
// size bytes.
func list[T any](d *dec, size int, f func() T) []T {
	v := make([]T, d.n(size))
	for j := range v {
		v[j] = f()
	}
	return v
}

func (d *dec) fs() []float64    { return list(d, 8, d.f) }
func (d *dec) is() []int        { return list(d, 8, d.i) }
func (d *dec) bools() []bool    { return list(d, 8, d.bool) }
func (d *dec) fss() [][]float64 { return list(d, 8, d.fs) }

// done returns the first error, or an error when bytes are left over.
func (d *dec) done(what string) error {
	if d.err != nil {
		return fmt.Errorf("audit: decoding %s: %w", what, d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("audit: decoding %s: %d bytes left over", what, len(d.b))
	}
	return nil
}

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
)

// MarshalBinary encodes f.
func (f *FactorSpec) MarshalBinary() ([]byte, error) {
	e := newEnc(kindFactor)
	e.i(f.P)
	e.fs(f.U)
	e.fs(f.Reduced.D)
	e.f(f.Reduced.Inv)
	e.i(int(f.Loss))
	e.i(len(f.Slots))
	for _, s := range f.Slots {
		e.i(s[0])
		e.i(s[1])
	}
	e.bool(f.WithRows)
	e.bool(f.Newton)
	e.b = append(e.b, f.Problem[:]...)
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into f, which must
// be new.
func (f *FactorSpec) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindFactor)
	f.P = d.i()
	f.U = d.fs()
	f.Reduced.D = d.fs()
	f.Reduced.Inv = d.f()
	f.Loss = hvp.Loss(d.i())
	f.Slots = make([][2]int, d.n(16))
	for j := range f.Slots {
		f.Slots[j] = [2]int{d.i(), d.i()}
	}
	f.WithRows = d.bool()
	f.Newton = d.bool()
	for j := range f.Problem {
		f.Problem[j] = d.byte()
	}
	return d.done("a factor")
}

// MarshalBinary encodes c.
func (c *BlockChunk) MarshalBinary() ([]byte, error) {
	e := newEnc(kindBlockChunk)
	e.is(c.seqs)
	e.is(c.blocks)
	e.i(len(c.labels))
	for _, l := range c.labels {
		e.str(l)
	}
	e.i(len(c.terms))
	for _, ts := range c.terms {
		e.i(len(ts))
		for _, t := range ts {
			e.i(t.f.T)
			e.i(t.f.H)
			e.f(t.y)
			e.f(t.fx)
			e.f(t.w)
			e.i(t.forcast)
		}
	}
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into c.
func (c *BlockChunk) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindBlockChunk)
	c.seqs = d.is()
	c.blocks = d.is()
	c.labels = make([]string, d.n(8))
	for j := range c.labels {
		c.labels[j] = d.str()
	}
	c.terms = make([][]ownTerm, d.n(8))
	for j := range c.terms {
		c.terms[j] = make([]ownTerm, d.n(48))
		for a := range c.terms[j] {
			t := &c.terms[j][a]
			t.f.T, t.f.H = d.i(), d.i()
			t.y, t.fx, t.w = d.f(), d.f(), d.f()
			t.forcast = d.i()
		}
	}
	return d.done("a block chunk")
}

// MarshalBinary encodes o.
func (o *BlockChunkOut) MarshalBinary() ([]byte, error) {
	e := newEnc(kindBlockChunkOut)
	e.i(len(o.recs))
	for _, r := range o.recs {
		e.fs(r.A)
		e.fs(r.S)
		e.fs(r.Res)
	}
	e.fs(o.gnorm)
	e.fs(o.norms)
	e.fs(o.shift)
	e.bool(o.lev != nil)
	if o.lev != nil {
		e.fss(o.lev)
		e.fs(o.levMax)
		e.bools(o.unbounded)
	}
	e.fs(o.total)
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into o.
func (o *BlockChunkOut) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindBlockChunkOut)
	o.recs = make([]BlockRecord, d.n(24))
	for j := range o.recs {
		o.recs[j] = BlockRecord{A: d.fs(), S: d.fs(), Res: d.fs()}
	}
	o.gnorm, o.norms, o.shift = d.fs(), d.fs(), d.fs()
	if d.bool() {
		o.lev, o.levMax, o.unbounded = d.fss(), d.fs(), d.bools()
	}
	o.total = d.fs()
	return d.done("a block chunk's output")
}

// MarshalBinary encodes c.
func (c *PointChunk) MarshalBinary() ([]byte, error) {
	e := newEnc(kindPointChunk)
	e.bool(c.cal)
	e.is(c.seqs)
	e.i(len(c.points))
	for _, p := range c.points {
		e.i(p.b)
		e.i(p.k)
		e.f(p.f)
		e.i(p.slot)
		e.i(p.skip)
		e.f(p.y)
		e.bool(p.labelled)
	}
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into c.
func (c *PointChunk) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindPointChunk)
	c.cal = d.bool()
	c.seqs = d.is()
	c.points = make([]chunkPoint, d.n(56))
	for j := range c.points {
		p := &c.points[j]
		p.b, p.k, p.f, p.slot, p.skip, p.y, p.labelled = d.i(), d.i(), d.f(), d.i(), d.i(), d.f(), d.bool()
	}
	return d.done("a point chunk")
}

// encodePoints writes pts to e.
func encodePoints(e *enc, pts []PointRecord) {
	e.i(len(pts))
	for _, p := range pts {
		e.f(p.F)
		e.i(p.Forecast)
		e.i(p.Skip)
		e.f(p.Y)
		e.bool(p.Labelled)
		e.fs(p.G)
		e.fs(p.H)
	}
}

// decodePoints reads what encodePoints wrote.
func decodePoints(d *dec) []PointRecord {
	pts := make([]PointRecord, d.n(56))
	for j := range pts {
		pts[j] = PointRecord{F: d.f(), Forecast: d.i(), Skip: d.i(), Y: d.f(), Labelled: d.bool(), G: d.fs(), H: d.fs()}
	}
	return pts
}

// EncodePoints encodes the output of a point chunk.
func EncodePoints(pts []PointRecord) []byte {
	e := newEnc(kindPoints)
	encodePoints(e, pts)
	return e.b
}

// DecodePoints decodes what EncodePoints encoded.
func DecodePoints(b []byte) ([]PointRecord, error) {
	d := newDec(b, kindPoints)
	pts := decodePoints(d)
	return pts, d.done("point records")
}

// MarshalBinary encodes t.
func (t *TableSpec) MarshalBinary() ([]byte, error) {
	e := newEnc(kindTable)
	e.f(t.Alpha)
	e.fs(t.Alphas)
	e.i(t.Table.N)
	e.i(t.Table.K)
	e.i(t.Table.KS)
	e.i(t.Table.F)
	e.fs(t.Table.Coef)
	e.fs(t.Table.Res)
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into t, checking
// the table's dimensions.
func (t *TableSpec) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindTable)
	t.Alpha, t.Alphas = d.f(), d.fs()
	bt := &t.Table
	bt.N, bt.K, bt.KS, bt.F = d.i(), d.i(), d.i(), d.i()
	bt.Coef, bt.Res = d.fs(), d.fs()
	if err := d.done("a block table"); err != nil {
		return err
	}
	if bt.N < 0 || bt.K < 0 || bt.KS < 0 || bt.F < 0 || len(bt.Coef) != bt.N*(bt.K+bt.KS) || len(bt.Res) != bt.N*bt.F {
		return fmt.Errorf("audit: decoding a block table: %d blocks of %d+%d coefficients and %d residuals in %d and %d floats", bt.N, bt.K, bt.KS, bt.F, len(bt.Coef), len(bt.Res))
	}
	return nil
}

// MarshalBinary encodes c.
func (c *FinalizeChunk) MarshalBinary() ([]byte, error) {
	e := newEnc(kindFinalizeChunk)
	encodePoints(e, c.Points)
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into c.
func (c *FinalizeChunk) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindFinalizeChunk)
	c.Points = decodePoints(d)
	return d.done("a finalize chunk")
}

// MarshalBinary encodes l.
func (l *ChunkLimits) MarshalBinary() ([]byte, error) {
	e := newEnc(kindLimits)
	e.fs(l.Lo)
	e.fs(l.Up)
	e.is(l.M)
	e.is(l.Covered)
	e.i(l.Labelled)
	return e.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into l.
func (l *ChunkLimits) UnmarshalBinary(b []byte) error {
	d := newDec(b, kindLimits)
	l.Lo, l.Up, l.M, l.Covered, l.Labelled = d.fs(), d.fs(), d.is(), d.is(), d.i()
	return d.done("a chunk's limits")
}
