package audit

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The float64 arrays of an artifact (every block's step or coordinates,
// the residuals, the basis, the training rows) follow the gob body as
// one raw section of little-endian float64s, in the order of
// fitBody.arrays, with their lengths in fitBody.Lens: read straight into
// one allocation, without gob's copy of the whole body and the decoded
// copy of each array (which made loading the 205 MB low-rank artifact
// of the 100,000-sequence LSTM take 6.5 s of CPU and 1.1 GB).

// arrays are pointers to every float64 array of b, in a fixed order that
// depends only on the lengths of b's lists, which the gob body carries.
func (b *fitBody) arrays() []*f64s {
	var out []*f64s
	for k := range b.Delta {
		out = append(out, &b.Delta[k])
	}
	for i := range b.Entries {
		out = append(out, &b.Entries[i].R)
	}
	if b.Table != nil {
		out = append(out, &b.Table.Coef, &b.Table.Res)
	}
	out = append(out, &b.Basis, &b.Shift)
	for i := range b.Naive {
		out = append(out, &b.Naive[i].R)
	}
	if b.Context != nil {
		out = append(out, &b.Context.Steps, &b.Context.X)
	}
	return out
}

// detach moves the arrays of b out of it: it records their lengths in
// b.Lens, empties them for the gob body and returns them for writeRaw.
func (b *fitBody) detach() []f64s {
	ptrs := b.arrays()
	out := make([]f64s, len(ptrs))
	b.Lens = make([]int, len(ptrs))
	for i, p := range ptrs {
		out[i], b.Lens[i] = *p, len(*p)
		*p = nil
	}
	return out
}

// writeRaw writes the arrays as little-endian float64s.
func writeRaw(w io.Writer, arrays []f64s) error {
	buf := make([]byte, 0, 1<<16)
	for _, a := range arrays {
		for _, x := range a {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err := w.Write(buf)
	return err
}

// attach reads the raw section from r into b's arrays, of the lengths
// b.Lens, into one allocation.
func (b *fitBody) attach(r *bufio.Reader) error {
	ptrs := b.arrays()
	if len(b.Lens) != len(ptrs) {
		return fmt.Errorf("%d array lengths for %d arrays: the file is damaged", len(b.Lens), len(ptrs))
	}
	total := 0
	for _, n := range b.Lens {
		if n < 0 || n > math.MaxInt/8-total {
			return errors.New("an array length out of range: the file is damaged")
		}
		total += n
	}
	all := make([]float64, total)
	chunk := make([]byte, 1<<16)
	for off := 0; off < total; {
		n := min(len(chunk)/8, total-off)
		if _, err := io.ReadFull(r, chunk[:8*n]); err != nil {
			return fmt.Errorf("the float arrays end after %d of %d values: the file is truncated", off, total)
		}
		for i := range n {
			all[off+i] = math.Float64frombits(binary.LittleEndian.Uint64(chunk[8*i:]))
		}
		off += n
	}
	off := 0
	for i, p := range ptrs {
		n := b.Lens[i]
		if n > 0 {
			*p = all[off : off+n : off+n]
		}
		off += n
	}
	return nil
}
