package artifact

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// The float64 arrays of an artifact (every block's step or coordinates,
// the residuals, the basis, the training rows) follow the gob body as
// one raw section of little-endian float64s, in the body's order, with
// their lengths in the body: read straight into one allocation, without
// gob's copy of the whole body and the decoded copy of each array (which
// made loading the 205 MB low-rank artifact of the 100,000-sequence LSTM
// take 6.5 s of CPU and 1.1 GB).

// Write writes an artifact: the magic, Version and the header h, then
// body as one gob value, then the arrays raw. The caller leaves the
// arrays empty in body and records their lengths there, for
// BodyReader.ReadRaw.
func Write(w io.Writer, h Header, body any, arrays [][]float64) error {
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(magic)
	binary.Write(bw, binary.LittleEndian, uint32(Version))
	binary.Write(bw, binary.LittleEndian, uint32(len(hj)))
	bw.Write(hj)
	if err := gob.NewEncoder(bw).Encode(body); err != nil {
		return err
	}
	if err := writeRaw(bw, arrays); err != nil {
		return err
	}
	return bw.Flush()
}

// writeRaw writes the arrays as little-endian float64s.
func writeRaw(w io.Writer, arrays [][]float64) error {
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

// A BodyReader reads what follows an artifact's header (ReadHeader): the
// gob body (Decode), then the raw arrays of the lengths it holds
// (ReadRaw).
type BodyReader struct {
	br *bufio.Reader
}

// NewBodyReader returns a BodyReader of r, positioned after the header.
func NewBodyReader(r io.Reader) *BodyReader {
	// An io.ByteReader: gob reads no further than its body.
	return &BodyReader{br: bufio.NewReaderSize(r, 1<<16)}
}

// Decode reads the gob body into body, a pointer to the value Write was
// given.
func (r *BodyReader) Decode(body any) error {
	return gob.NewDecoder(r.br).Decode(body)
}

// ReadRaw reads the raw section after the body: one array of each of
// the lengths, in order, in one allocation; an array of length 0 is nil.
// It refuses a negative or overflowing length before it allocates.
func (r *BodyReader) ReadRaw(lens []int) ([][]float64, error) {
	total := 0
	for _, n := range lens {
		if n < 0 || n > math.MaxInt/8-total {
			return nil, errors.New("an array length out of range: the file is damaged")
		}
		total += n
	}
	all := make([]float64, total)
	chunk := make([]byte, 1<<16)
	for off := 0; off < total; {
		n := min(len(chunk)/8, total-off)
		if _, err := io.ReadFull(r.br, chunk[:8*n]); err != nil {
			return nil, fmt.Errorf("the float arrays end after %d of %d values: the file is truncated", off, total)
		}
		for i := range n {
			all[off+i] = math.Float64frombits(binary.LittleEndian.Uint64(chunk[8*i:]))
		}
		off += n
	}
	out := make([][]float64, len(lens))
	off := 0
	for i, n := range lens {
		if n > 0 {
			out[i] = all[off : off+n : off+n]
		}
		off += n
	}
	return out, nil
}

// EncodeFloats is the gob encoding of a float64 array left in the body
// (package audit's f64s.GobEncode): its values as little-endian bytes,
// every bit kept.
func EncodeFloats(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// DecodeFloats is EncodeFloats' inverse; no bytes are a nil array.
func DecodeFloats(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes of float64s", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}
