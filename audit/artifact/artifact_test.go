package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// record stands for package audit's body: a gob value whose float64
// arrays travel in the raw section, their lengths in the value.
type record struct {
	Name string
	Lens []int
}

// write is an artifact of h, body and arrays, failing t on an error.
func write(t *testing.T, h Header, body any, arrays [][]float64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, h, body, arrays); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// write5 is write of version 5 (writeV5).
func write5(t *testing.T, h Header, body any, arrays [][]float64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeV5(&buf, h, body, arrays); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRoundTrip checks that what Write writes Read, Decode and Arrays
// read back, every bit of the floats kept, that ReadHeader reads the
// header alone, and that the file opens with the magic, the version,
// the three lengths and the CRC-32C of each section.
func TestRoundTrip(t *testing.T) {
	h := Header{Format: FormatName, Version: Version, ModelSHA256: "ab", Features: []string{"x"}, Targets: []string{"y"},
		Inputs: map[string][]string{"in": {"x"}}, Representation: LowRank, Blocks: 3, Parameters: 7, Rank: 2}
	arrays := [][]float64{{1, math.Copysign(0, -1), math.Inf(-1)}, nil, {math.Float64frombits(0x7ff8000000000001)}, make([]float64, 9000)}
	lens := make([]int, len(arrays))
	for i, a := range arrays {
		lens[i] = len(a)
	}
	art := write(t, h, &record{Name: "fit", Lens: lens}, arrays)
	if !bytes.HasPrefix(art, []byte("rnnaudit-fit\r\n\x06\x00\x00\x00")) {
		t.Fatalf("artifact opens with %q, want the magic and version 6 little-endian", art[:18])
	}
	n := binary.LittleEndian.Uint32(art[18:])
	body, raw := binary.LittleEndian.Uint64(art[22:]), binary.LittleEndian.Uint64(art[30:])
	if art[50] != '{' || art[50+n-1] != '}' {
		t.Errorf("header length %d does not frame the JSON header", n)
	}
	if raw != 8*9004 || uint64(len(art)) != 50+uint64(n)+body+raw {
		t.Fatalf("lengths %d, %d, %d for a file of %d bytes with 9004 floats", n, body, raw, len(art))
	}
	// The CRC-32C of each section, computed here with the standard
	// library's reference of the polynomial.
	crc := func(b ...[]byte) uint32 {
		s := crc32.New(crc32.MakeTable(crc32.Castagnoli))
		for _, p := range b {
			s.Write(p)
		}
		return s.Sum32()
	}
	hEnd, bEnd := 50+uint64(n), 50+uint64(n)+body
	for i, want := range []uint32{crc(art[:38], art[50:hEnd]), crc(art[hEnd:bEnd]), crc(art[bEnd:])} {
		if got := binary.LittleEndian.Uint32(art[38+4*i:]); got != want {
			t.Errorf("bytes %d to %d: %08x, want the CRC-32C of the %s section %08x", 38+4*i, 42+4*i, got, sectionNames[i], want)
		}
	}
	// The CRC-32C of "123456789" is e3069283 (its check value).
	if got := crc([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("CRC-32C check value %08x", got)
	}
	got, err := ReadHeader(bytes.NewReader(art))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("header %+v, want %+v", got, h)
	}
	for _, r := range []io.Reader{bytes.NewReader(art), struct{ io.Reader }{bytes.NewReader(art)}} {
		c, err := Read(r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Header, h) {
			t.Errorf("header %+v, want %+v", c.Header, h)
		}
		var rec record
		if err := c.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.Name != "fit" || !reflect.DeepEqual(rec.Lens, lens) {
			t.Errorf("body %+v, want name fit and lengths %v", rec, lens)
		}
		got, err := c.Arrays(rec.Lens)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range arrays {
			if len(got[i]) != len(a) || (len(a) == 0) != (got[i] == nil) {
				t.Fatalf("array %d: %d values (nil %v), want %d", i, len(got[i]), got[i] == nil, len(a))
			}
			for j := range a {
				if math.Float64bits(got[i][j]) != math.Float64bits(a[j]) {
					t.Errorf("array %d value %d: bits %x, want %x", i, j, math.Float64bits(got[i][j]), math.Float64bits(a[j]))
				}
			}
		}
	}
}

// TestReadRefuses checks that ReadHeader and Read refuse another file,
// another version, lengths beyond their bounds or the file's size
// (before allocating them), a truncated file, any flipped bit (naming
// the section whose CRC-32C disagrees: ReadHeader the header's, Read
// every one) and bytes after the end, with one message each.
func TestReadRefuses(t *testing.T) {
	art := write(t, Header{Format: FormatName, Version: Version}, &record{Name: "x", Lens: []int{2}}, [][]float64{{1, 2}})
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(art); f(b); return b }
	put64 := func(at int, v uint64) []byte {
		return edit(func(b []byte) { binary.LittleEndian.PutUint64(b[at:], v) })
	}
	const damaged = "section has CRC-32C"
	for _, c := range []struct {
		name   string
		file   []byte
		header string // ReadHeader's error; "" when it reads the header
		want   string // Read's
	}{
		{"empty", nil, "not a fitted audit (written by audit fit --save)", "not a fitted audit"},
		{"another magic", edit(func(b []byte) { b[0] = 'R' }), "not a fitted audit (written by audit fit --save)", "not a fitted audit"},
		{"no version", art[:len(magic)+2], "truncated header: unexpected EOF", "truncated header"},
		{"version 4", edit(func(b []byte) { b[len(magic)] = 4 }), "format version 4, this audit reads versions 5 and 6: fit again with this version", "format version 4"},
		{"version 7", edit(func(b []byte) { b[len(magic)] = 7 }), "format version 7, this audit reads versions 5 and 6", "format version 7"},
		{"no lengths", art[:len(magic)+4], "truncated header: EOF", "truncated header"},
		{"no digests", art[:40], "truncated header: unexpected EOF", "truncated header"},
		{"huge header", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[18:], maxHeader+1) }), "header of 67108865 bytes: the file is damaged", "header of"},
		{"huge body", put64(22, 1e12), "a body of 1000000000000 bytes and 16 bytes of arrays, more than an artifact holds (16 GiB): the file is damaged", "a body of"},
		{"body beyond the file", put64(22, 1e6), "the file is ", "the file is truncated or damaged"},
		{"huge arrays", put64(30, 8e12), "a body of", "a body of"},
		{"odd arrays", put64(30, 15), "15 bytes of float64 arrays, not a multiple of 8: the file is damaged", "not a multiple of 8"},
		{"truncated", art[:len(art)-8], "the file is ", "truncated or damaged"},
		{"a byte more", append(bytes.Clone(art), 0), "the file is ", "truncated or damaged"},
		{"a flipped bit in the header", edit(func(b []byte) { b[55] ^= 0x20 }), "its header section has CRC-32C", "its header section has CRC-32C"},
		{"a flipped bit in the body", edit(func(b []byte) { b[len(b)-20] ^= 1 }), "", "its body section has CRC-32C"},
		{"a flipped exponent bit in an array", edit(func(b []byte) { b[len(b)-1] ^= 0x40 }), "", "its float arrays section has CRC-32C"},
		{"a NaN in an array", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[len(b)-8:], 0x7ff8000000000000) }), "", "its float arrays " + damaged},
		{"a flipped bit in the header's CRC-32C", edit(func(b []byte) { b[38] ^= 1 }), "its header " + damaged, "its header " + damaged},
		{"a flipped bit in the body's CRC-32C", edit(func(b []byte) { b[43] ^= 1 }), "", "its body " + damaged},
		{"a flipped bit in the arrays' CRC-32C", edit(func(b []byte) { b[49] ^= 0x80 }), "", "its float arrays " + damaged},
	} {
		if _, err := ReadHeader(bytes.NewReader(c.file)); (c.header == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.header) {
			t.Errorf("%s: ReadHeader's error %v, want %q", c.name, err, c.header)
		}
		for _, r := range []io.Reader{bytes.NewReader(c.file), struct{ io.Reader }{bytes.NewReader(c.file)}} {
			_, err := Read(r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				_, sized := r.(*bytes.Reader)
				if !sized && strings.Contains(c.want, "truncated or damaged") && err != nil {
					continue // read as a stream, the same damage is found later
				}
				t.Errorf("%s (size known %v): Read's error %v, want %q", c.name, sized, err, c.want)
			}
			if err != nil && strings.Contains(c.want, damaged) && !strings.HasSuffix(err.Error(), "the file is damaged (changed after audit fit --save wrote it); copy it again or fit again") {
				t.Errorf("%s: Read's error %q does not say what to do", c.name, err)
			}
		}
	}
}

// TestRoundTripVersion5 checks that what version 5 wrote (writeV5) Read, Decode and Arrays
// read back, every bit of the floats kept, that ReadHeader reads the
// header alone, and that the file opens with the magic, the version,
// the three lengths and the SHA-256 of the rest.
func TestRoundTripVersion5(t *testing.T) {
	h := Header{Format: FormatName, Version: version5, ModelSHA256: "ab", Features: []string{"x"}, Targets: []string{"y"},
		Inputs: map[string][]string{"in": {"x"}}, Representation: LowRank, Blocks: 3, Parameters: 7, Rank: 2}
	arrays := [][]float64{{1, math.Copysign(0, -1), math.Inf(-1)}, nil, {math.Float64frombits(0x7ff8000000000001)}, make([]float64, 9000)}
	lens := make([]int, len(arrays))
	for i, a := range arrays {
		lens[i] = len(a)
	}
	art := write5(t, h, &record{Name: "fit", Lens: lens}, arrays)
	if !bytes.HasPrefix(art, []byte("rnnaudit-fit\r\n\x05\x00\x00\x00")) {
		t.Fatalf("artifact opens with %q, want the magic and version 5 little-endian", art[:18])
	}
	n := binary.LittleEndian.Uint32(art[18:])
	body, raw := binary.LittleEndian.Uint64(art[22:]), binary.LittleEndian.Uint64(art[30:])
	if art[70] != '{' || art[70+n-1] != '}' {
		t.Errorf("header length %d does not frame the JSON header", n)
	}
	if raw != 8*9004 || uint64(len(art)) != 70+uint64(n)+body+raw {
		t.Errorf("lengths %d, %d, %d for a file of %d bytes with 9004 floats", n, body, raw, len(art))
	}
	sum := sha256.New()
	sum.Write(art[:38])
	sum.Write(art[70:])
	if !bytes.Equal(sum.Sum(nil), art[38:70]) {
		t.Error("bytes 38 to 70 are not the SHA-256 of the rest of the file")
	}
	got, err := ReadHeader(bytes.NewReader(art))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("header %+v, want %+v", got, h)
	}
	// Read on a reader that does not tell its size reads the same.
	for _, r := range []io.Reader{bytes.NewReader(art), struct{ io.Reader }{bytes.NewReader(art)}} {
		c, err := Read(r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Header, h) {
			t.Errorf("header %+v, want %+v", c.Header, h)
		}
		var rec record
		if err := c.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.Name != "fit" || !reflect.DeepEqual(rec.Lens, lens) {
			t.Errorf("body %+v, want name fit and lengths %v", rec, lens)
		}
		got, err := c.Arrays(rec.Lens)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(arrays) {
			t.Fatalf("%d arrays, want %d", len(got), len(arrays))
		}
		for i, a := range arrays {
			if len(got[i]) != len(a) || (len(a) == 0) != (got[i] == nil) {
				t.Fatalf("array %d: %d values (nil %v), want %d", i, len(got[i]), got[i] == nil, len(a))
			}
			for j := range a {
				if math.Float64bits(got[i][j]) != math.Float64bits(a[j]) {
					t.Errorf("array %d value %d: bits %x, want %x", i, j, math.Float64bits(got[i][j]), math.Float64bits(a[j]))
				}
			}
		}
		// Lengths that do not add up to the raw section are refused.
		for _, l := range [][]int{{3, 0, 1, 8999}, {3, 0, 1, 9001}, {-1, 0, 1, 9005}, {math.MaxInt, math.MaxInt, 1, 9000}} {
			if _, err := c.Arrays(l); err == nil || !strings.HasSuffix(err.Error(), "the file is damaged") {
				t.Errorf("lengths %v: error %v, want one saying the file is damaged", l, err)
			}
		}
	}
}

// TestReadRefusesVersion5 checks that ReadHeader and Read refuse, in a
// version 5 artifact, another file, another version, lengths beyond their bounds or the file's size
// (before allocating them), a truncated file, any flipped bit and bytes
// after the end, with one message each.
func TestReadRefusesVersion5(t *testing.T) {
	art := write5(t, Header{Format: FormatName, Version: version5}, &record{Name: "x", Lens: []int{2}}, [][]float64{{1, 2}})
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(art); f(b); return b }
	put64 := func(at int, v uint64) []byte {
		return edit(func(b []byte) { binary.LittleEndian.PutUint64(b[at:], v) })
	}
	for _, c := range []struct {
		name   string
		file   []byte
		header string // ReadHeader's error; "" when it reads the header
		want   string // Read's
	}{
		{"empty", nil, "not a fitted audit (written by audit fit --save)", "not a fitted audit"},
		{"another magic", edit(func(b []byte) { b[0] = 'R' }), "not a fitted audit (written by audit fit --save)", "not a fitted audit"},
		{"no version", art[:len(magic)+2], "truncated header: unexpected EOF", "truncated header"},
		{"version 4", edit(func(b []byte) { b[len(magic)] = 4 }), "format version 4, this audit reads versions 5 and 6: fit again with this version", "format version 4"},
		{"no lengths", art[:len(magic)+4], "truncated header: EOF", "truncated header"},
		{"huge header", edit(func(b []byte) { binary.LittleEndian.PutUint32(b[18:], maxHeader+1) }), "header of 67108865 bytes: the file is damaged", "header of"},
		{"huge body", put64(22, 1e12), "a body of 1000000000000 bytes and 16 bytes of arrays, more than an artifact holds (16 GiB): the file is damaged", "a body of"},
		{"body beyond the file", put64(22, 1e6), "the file is ", "the file is truncated or damaged"},
		{"huge arrays", put64(30, 8e12), "a body of", "a body of"},
		{"odd arrays", put64(30, 15), "15 bytes of float64 arrays, not a multiple of 8: the file is damaged", "not a multiple of 8"},
		{"truncated", art[:len(art)-8], "the file is ", "truncated or damaged"},
		{"a byte more", append(bytes.Clone(art), 0), "the file is ", "truncated or damaged"},
		{"a flipped bit in the header", edit(func(b []byte) { b[75] ^= 0x20 }), "", "the file is damaged (changed after audit fit --save wrote it)"},
		{"a flipped bit in the body", edit(func(b []byte) { b[len(b)-20] ^= 1 }), "", "the file is damaged (changed after audit fit --save wrote it)"},
		{"a flipped exponent bit in an array", edit(func(b []byte) { b[len(b)-1] ^= 0x40 }), "", "the file is damaged (changed after audit fit --save wrote it)"},
		{"a NaN in an array", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[len(b)-8:], 0x7ff8000000000000) }), "", "the file is damaged"},
		{"a flipped bit in the SHA-256", edit(func(b []byte) { b[40] ^= 1 }), "", "the file is damaged"},
	} {
		if _, err := ReadHeader(bytes.NewReader(c.file)); (c.header == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.header) {
			t.Errorf("%s: ReadHeader's error %v, want %q", c.name, err, c.header)
		}
		for _, r := range []io.Reader{bytes.NewReader(c.file), struct{ io.Reader }{bytes.NewReader(c.file)}} {
			if _, err := Read(r); err == nil || !strings.Contains(err.Error(), c.want) {
				_, sized := r.(*bytes.Reader)
				if !sized && strings.Contains(c.want, "truncated or damaged") && err != nil {
					continue // read as a stream, the same damage is found later
				}
				t.Errorf("%s (size known %v): Read's error %v, want %q", c.name, sized, err, c.want)
			}
		}
	}
}

// TestFloats checks that DecodeFloats inverts EncodeFloats bit for bit,
// reads no bytes as nil and refuses a length that is not a multiple of 8.
func TestFloats(t *testing.T) {
	v := []float64{1.5, math.Copysign(0, -1), math.NaN(), math.Inf(1)}
	b := EncodeFloats(v)
	if len(b) != 8*len(v) || binary.LittleEndian.Uint64(b) != math.Float64bits(1.5) {
		t.Fatalf("encoding %x, want 8 little-endian bytes a value", b)
	}
	got, err := DecodeFloats(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if math.Float64bits(got[i]) != math.Float64bits(v[i]) {
			t.Errorf("value %d: bits %x, want %x", i, math.Float64bits(got[i]), math.Float64bits(v[i]))
		}
	}
	if got, err := DecodeFloats(nil); got != nil || err != nil {
		t.Errorf("no bytes: %v, %v; want nil, nil", got, err)
	}
	if _, err := DecodeFloats(b[:7]); err == nil || err.Error() != "7 bytes of float64s" {
		t.Errorf("7 bytes: error %v, want \"7 bytes of float64s\"", err)
	}
}

// BenchmarkRead reads (and checks) a 64 MiB artifact from memory: the
// cost of the CRC-32C of each section is the difference from
// BenchmarkReadNoCheck, of version 5's SHA-256 that of
// BenchmarkReadVersion5.
func BenchmarkRead(b *testing.B) {
	art := bigArtifact(b, Write)
	b.SetBytes(int64(len(art)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(art)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadVersion5 reads the same arrays from a version 5
// artifact, whose SHA-256 covers the whole file.
func BenchmarkReadVersion5(b *testing.B) {
	art := bigArtifact(b, writeV5)
	b.SetBytes(int64(len(art)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(art)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadNoCheck decodes the same raw section as BenchmarkRead
// without a digest: what reading costs without a check.
func BenchmarkReadNoCheck(b *testing.B) {
	art := bigArtifact(b, Write)
	b.SetBytes(int64(len(art)))
	for b.Loop() {
		if _, err := readFloats(bytes.NewReader(art[preambleLen:]), int64(len(art)-preambleLen)/8, true, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// bigArtifact is an artifact of 8 Mi float64s (64 MiB) written by
// write.
func bigArtifact(b *testing.B, write func(io.Writer, Header, any, [][]float64) error) []byte {
	v := make([]float64, 8<<20)
	for i := range v {
		v[i] = float64(i)
	}
	var buf bytes.Buffer
	if err := write(&buf, Header{Format: FormatName, Version: Version}, &record{Lens: []int{len(v)}}, [][]float64{v}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeForgedLength checks that a gob body whose first message
// claims 4 GiB (as a forger who reseals the SHA-256 may write) is refused
// without allocating what it claims: gob reads a message in bounded
// chunks, so what is allocated follows the bytes that are there.
func TestDecodeForgedLength(t *testing.T) {
	c := &Contents{body: append([]byte{0xfb, 0x01, 0, 0, 0, 0}, make([]byte, 100)...)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var rec record
	err := c.Decode(&rec)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a body claiming 4 GiB decoded")
	}
	t.Logf("%v; %d bytes allocated", err, after.TotalAlloc-before.TotalAlloc)
	if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20 {
		t.Errorf("decoding it allocated %d bytes", d)
	}
}

// TestFinite checks Finite against math.IsInf and math.IsNaN: every
// finite value (the largest, the smallest subnormal, -0) passes, and an
// infinity or a NaN at any position, in the blocks of four or the tail,
// fails.
func TestFinite(t *testing.T) {
	ok := []float64{1, -2.5, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0, 1e308}
	if !Finite(nil) || !Finite(ok) || !Finite(ok[:3]) {
		t.Fatal("finite values refused")
	}
	for _, bad := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0xfff0000000000001)} {
		for at := range ok {
			v := slices.Clone(ok)
			v[at] = bad
			if Finite(v) {
				t.Errorf("%v at %d of %d values: finite", bad, at, len(v))
			}
			if Finite(v[at : at+1]) {
				t.Errorf("%v alone: finite", bad)
			}
		}
	}
}
