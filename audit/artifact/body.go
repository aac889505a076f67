package artifact

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
)

// The float64 arrays of an artifact (every block's step or coordinates,
// the residuals, the basis, the training rows) follow the gob body as
// one raw section of little-endian float64s, in the body's order, with
// their lengths in the body: read straight into one allocation, without
// gob's copy of the whole body and the decoded copy of each array (which
// made loading the 205 MB low-rank artifact of the 100,000-sequence LSTM
// take 6.5 s of CPU and 1.1 GB).

// Write writes a Version artifact: the preamble (magic, Version, the
// lengths and the CRC-32C of each section), the header h, then body as
// one gob value, then the arrays raw. The caller leaves the arrays empty
// in body and records their lengths there, for Contents.Arrays. The
// arrays are encoded twice, once for their CRC-32C and once for w, so
// that nothing of their size is buffered.
func Write(w io.Writer, h Header, body any, arrays [][]float64) error {
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	var gb bytes.Buffer
	if err := gob.NewEncoder(&gb).Encode(body); err != nil {
		return err
	}
	raw := int64(0)
	for _, a := range arrays {
		raw += 8 * int64(len(a))
	}
	if len(hj) > maxHeader || int64(gb.Len()) > MaxSize || raw > MaxSize {
		return fmt.Errorf("a header of %d bytes, a body of %d and %d bytes of arrays: more than an artifact holds (%d GiB)", len(hj), gb.Len(), raw, MaxSize>>30)
	}
	pre := make([]byte, 0, preambleLen)
	pre = append(pre, magic...)
	pre = binary.LittleEndian.AppendUint32(pre, Version)
	pre = binary.LittleEndian.AppendUint32(pre, uint32(len(hj)))
	pre = binary.LittleEndian.AppendUint64(pre, uint64(gb.Len()))
	pre = binary.LittleEndian.AppendUint64(pre, uint64(raw))
	rawSum := crc32.New(castagnoli())
	if err := writeRaw(rawSum, arrays); err != nil {
		return err
	}
	pre = binary.LittleEndian.AppendUint32(pre, crc32.Update(crc32.Checksum(pre, castagnoli()), castagnoli(), hj))
	pre = binary.LittleEndian.AppendUint32(pre, crc32.Checksum(gb.Bytes(), castagnoli()))
	pre = binary.LittleEndian.AppendUint32(pre, rawSum.Sum32())
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(pre)
	bw.Write(hj)
	bw.Write(gb.Bytes())
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

// Contents is an artifact read whole and checked (Read): its header,
// its gob body not yet decoded, and its float64 arrays in one
// allocation.
type Contents struct {
	Header Header
	body   []byte
	raw    []float64
}

// Read reads a whole artifact from r and checks it before anything
// after the header is decoded: the magic and the version, every length
// against MaxSize and against the bytes the file holds (when r tells
// them: an *os.File of a regular file, a bytes.Reader; otherwise what is
// allocated grows with what is read), then each section's CRC-32C as it
// is read (a version 5 artifact: the SHA-256 of all its bytes). A
// damaged file is refused saying what failed and in which section;
// nothing of it is returned.
func Read(r io.Reader) (*Contents, error) {
	size := sizeOf(r)
	p, err := readPreamble(r, size)
	if err != nil {
		return nil, err
	}
	known := size >= 0
	hj, err := readHeaderSection(r, p, known)
	if err != nil {
		return nil, err
	}
	var sum hash.Hash
	if p.version == version5 {
		sum = sha256.New()
		sum.Write(p.bytes)
		sum.Write(hj)
	}
	c := &Contents{}
	if c.body, err = readN(r, p.body, known); err != nil {
		return nil, fmt.Errorf("the body ends after %d of %d bytes: the file is truncated", len(c.body), p.body)
	}
	if sum != nil {
		sum.Write(c.body)
	} else if err := p.check(secBody, crc32.Checksum(c.body, castagnoli())); err != nil {
		return nil, err
	}
	if sum == nil {
		sum = crc32.New(castagnoli())
	}
	if c.raw, err = readFloats(r, p.raw/8, known, sum); err != nil {
		return nil, err
	}
	if !known {
		if n, _ := io.ReadFull(r, make([]byte, 1)); n > 0 {
			return nil, errors.New("bytes after the end its lengths say: the file is damaged")
		}
	}
	if p.version == version5 {
		if got := sum.Sum(nil); !bytes.Equal(got, p.sum[:]) {
			return nil, fmt.Errorf("its bytes have SHA-256 %x, it records %x: the file is damaged (changed after audit fit --save wrote it); copy it again or fit again", got[:8], p.sum[:8])
		}
	} else if err := p.check(secRaw, sum.(hash.Hash32).Sum32()); err != nil {
		return nil, err
	}
	if err := parseHeader(hj, &c.Header); err != nil {
		return nil, err
	}
	return c, nil
}

// Decode decodes the gob body into body, a pointer to the value Write
// was given, refusing bytes left after it.
func (c *Contents) Decode(body any) error {
	r := bytes.NewReader(c.body)
	if err := gob.NewDecoder(r).Decode(body); err != nil {
		return err
	}
	if r.Len() > 0 {
		return fmt.Errorf("%d bytes after the gob value: the file is damaged", r.Len())
	}
	return nil
}

// Arrays returns the raw section as one array of each of the lengths,
// in order; an array of length 0 is nil. The lengths must be those the
// writer recorded: they must add up to the raw section exactly.
func (c *Contents) Arrays(lens []int) ([][]float64, error) {
	total := 0
	for _, n := range lens {
		if n < 0 || n > len(c.raw)-total {
			return nil, fmt.Errorf("array lengths beyond the %d values of the raw section: the file is damaged", len(c.raw))
		}
		total += n
	}
	if total != len(c.raw) {
		return nil, fmt.Errorf("array lengths of %d values for the %d of the raw section: the file is damaged", total, len(c.raw))
	}
	out := make([][]float64, len(lens))
	off := 0
	for i, n := range lens {
		if n > 0 {
			out[i] = c.raw[off : off+n : off+n]
		}
		off += n
	}
	return out, nil
}

// Finite says whether every value of v is finite: the arrays the format
// says are finite (steps, basis, coordinates, training rows) are refused
// otherwise. x·0 is 0 for a finite x and NaN for an infinite one or a
// NaN, so four sums of them stay 0 exactly when every value is finite:
// without a branch a value, which makes the check of the 481,000 steps
// of the paper-scale example a small part of loading them.
func Finite(v []float64) bool {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		s0 += v[i] * 0
		s1 += v[i+1] * 0
		s2 += v[i+2] * 0
		s3 += v[i+3] * 0
	}
	for ; i < len(v); i++ {
		s0 += v[i] * 0
	}
	return s0+s1+s2+s3 == 0
}

// sizeOf is the number of bytes r holds from its position on, or -1
// when r does not tell: an *os.File of a regular file, or a reader with
// Len (bytes.Reader, strings.Reader, bytes.Buffer).
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return -1
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return st.Size() - off
	}
	return -1
}

// readN reads n bytes of r. When n was checked against the bytes r
// holds (known), it allocates them at once; otherwise what it allocates
// grows with what it reads, so that a forged length costs no more memory
// than the bytes that are there.
func readN(r io.Reader, n int64, known bool) ([]byte, error) {
	if known {
		b := make([]byte, n)
		k, err := io.ReadFull(r, b)
		return b[:k], err
	}
	var buf bytes.Buffer
	k, err := io.CopyN(&buf, r, n)
	if k < n && err == nil {
		err = io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}

// readFloats reads n little-endian float64s from r into one allocation
// (all at once when known, as readN), writing their bytes to sum, in
// chunks of 64 KiB, one after another: with the CRC-32C of Version the
// check costs a small part of reading (on the 64 MiB of BenchmarkRead);
// version 5's SHA-256 costs more than reading.
func readFloats(r io.Reader, n int64, known bool, sum io.Writer) ([]float64, error) {
	if n == 0 {
		return nil, nil
	}
	all := make([]float64, 0, min(n, 1<<16))
	if known {
		all = make([]float64, 0, n)
	}
	const chunk = 1 << 16
	buf := make([]byte, chunk)
	for int64(len(all)) < n {
		k := int(min(chunk/8, n-int64(len(all))))
		c := buf[:8*k]
		if _, err := io.ReadFull(r, c); err != nil {
			return nil, fmt.Errorf("the float arrays end after %d of %d values: the file is truncated", len(all), n)
		}
		sum.Write(c)
		all = slices.Grow(all, k)
		dst := all[len(all) : len(all)+k]
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(c[8*i:]))
		}
		all = all[:len(all)+k]
	}
	return all, nil
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
