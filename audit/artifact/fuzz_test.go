package artifact

import (
	"bytes"
	"io"
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/artifact/artifacttest"
)

// FuzzRead checks that Read, Decode and Arrays never panic and never
// return arrays other than the raw section on any bytes, of either
// version, given as they are and resealed with the digests of their
// other bytes (as a forger would: artifacttest.Reseal), through a reader that tells
// its size and one that does not.
func FuzzRead(f *testing.F) {
	for _, write := range []func(io.Writer, Header, any, [][]float64) error{Write, writeV5} {
		var buf bytes.Buffer
		if err := write(&buf, Header{Format: FormatName, Version: Version, Blocks: 2}, &record{Name: "x", Lens: []int{2, 0, 3}}, [][]float64{{1, 2}, nil, {3, math.NaN(), 5}}); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), false, false)
		f.Add(buf.Bytes(), true, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, sealed, stream bool) {
		if sealed {
			b = artifacttest.Reseal(b)
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

// TestReseal checks that artifacttest.Reseal leaves an artifact of
// either version as it is and makes Read accept one whose body was
// edited, which it refuses unsealed.
func TestReseal(t *testing.T) {
	for _, write := range []func(io.Writer, Header, any, [][]float64) error{Write, writeV5} {
		var buf bytes.Buffer
		if err := write(&buf, Header{Format: FormatName, Version: Version}, &record{Name: "x", Lens: []int{2}}, [][]float64{{1, 2}}); err != nil {
			t.Fatal(err)
		}
		art := buf.Bytes()
		if !bytes.Equal(artifacttest.Reseal(art), art) {
			t.Errorf("version %d: Reseal changed an intact artifact", art[14])
		}
		bad := bytes.Clone(art)
		bad[len(bad)-20] ^= 1 // in the body
		if _, err := Read(bytes.NewReader(bad)); err == nil {
			t.Fatalf("version %d: an edited body read", art[14])
		}
		if _, err := Read(bytes.NewReader(artifacttest.Reseal(bad))); err != nil {
			t.Errorf("version %d: resealed, an edited body: %v", art[14], err)
		}
	}
}
