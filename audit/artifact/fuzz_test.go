package artifact

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math"
	"testing"
)

// FuzzRead checks that Read, Decode and Arrays never panic and never
// return arrays other than the raw section on any bytes, given as they
// are and resealed with the SHA-256 of their other bytes (as a forger
// would), through a reader that tells its size and one that does not.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	if err := Write(&buf, Header{Format: FormatName, Version: Version, Blocks: 2}, &record{Name: "x", Lens: []int{2, 0, 3}}, [][]float64{{1, 2}, nil, {3, math.NaN(), 5}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes(), false, false)
	f.Add(buf.Bytes(), true, true)
	f.Fuzz(func(t *testing.T, b []byte, sealed, stream bool) {
		if sealed && len(b) >= preambleLen {
			b = bytes.Clone(b)
			s := sha256.New()
			s.Write(b[:preambleLen-sha256.Size])
			s.Write(b[preambleLen:])
			copy(b[preambleLen-sha256.Size:preambleLen], s.Sum(nil))
		}
		var r io.Reader = bytes.NewReader(b)
		if stream {
			r = struct{ io.Reader }{r}
		}
		ReadHeader(bytes.NewReader(b))
		c, err := Read(r)
		if err != nil {
			return
		}
		if int64(8*len(c.raw)) > int64(len(b)) || len(c.body) > len(b) {
			t.Fatalf("%d floats and a body of %d bytes from %d bytes", len(c.raw), len(c.body), len(b))
		}
		var rec record
		if c.Decode(&rec) != nil {
			return
		}
		arrays, err := c.Arrays(rec.Lens)
		if err != nil {
			return
		}
		n := 0
		for _, a := range arrays {
			n += len(a)
		}
		if n != len(c.raw) {
			t.Fatalf("arrays of %d values from a raw section of %d", n, len(c.raw))
		}
	})
}
