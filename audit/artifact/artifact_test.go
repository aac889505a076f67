package artifact

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
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

// TestRoundTrip checks that what Write writes ReadHeader, Decode and
// ReadRaw read back, every bit of the floats kept, and that the file
// opens with the magic, the version and the header's length.
func TestRoundTrip(t *testing.T) {
	h := Header{Format: FormatName, Version: Version, ModelSHA256: "ab", Features: []string{"x"}, Targets: []string{"y"},
		Inputs: map[string][]string{"in": {"x"}}, Representation: LowRank, Blocks: 3, Parameters: 7, Rank: 2}
	arrays := [][]float64{{1, math.Copysign(0, -1), math.Inf(-1)}, nil, {math.Float64frombits(0x7ff8000000000001)}, make([]float64, 9000)}
	lens := make([]int, len(arrays))
	for i, a := range arrays {
		lens[i] = len(a)
	}
	art := write(t, h, &record{Name: "fit", Lens: lens}, arrays)
	if !bytes.HasPrefix(art, []byte("rnnaudit-fit\r\n\x04\x00\x00\x00")) {
		t.Fatalf("artifact opens with %q, want the magic and version 4 little-endian", art[:18])
	}
	if n := binary.LittleEndian.Uint32(art[18:]); art[22] != '{' || art[22+n-1] != '}' {
		t.Errorf("header length %d does not frame the JSON header", n)
	}
	r := bytes.NewReader(art)
	got, err := ReadHeader(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("header %+v, want %+v", got, h)
	}
	br := NewBodyReader(r)
	var rec record
	if err := br.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.Name != "fit" || !reflect.DeepEqual(rec.Lens, lens) {
		t.Errorf("body %+v, want name fit and lengths %v", rec, lens)
	}
	raw, err := br.ReadRaw(rec.Lens)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != len(arrays) {
		t.Fatalf("%d arrays, want %d", len(raw), len(arrays))
	}
	for i, a := range arrays {
		if len(raw[i]) != len(a) || (len(a) == 0) != (raw[i] == nil) {
			t.Fatalf("array %d: %d values (nil %v), want %d", i, len(raw[i]), raw[i] == nil, len(a))
		}
		for j := range a {
			if math.Float64bits(raw[i][j]) != math.Float64bits(a[j]) {
				t.Errorf("array %d value %d: bits %x, want %x", i, j, math.Float64bits(raw[i][j]), math.Float64bits(a[j]))
			}
		}
	}
	if n, _ := r.Read(make([]byte, 1)); n != 0 {
		t.Error("bytes left after the raw section")
	}
	// A truncated raw section is refused, saying how far it got.
	r = bytes.NewReader(art[:len(art)-8])
	if _, err := ReadHeader(r); err != nil {
		t.Fatal(err)
	}
	br = NewBodyReader(r)
	if err := br.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadRaw(rec.Lens); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated raw section: error %v, want one saying the file is truncated", err)
	}
}

// TestReadHeaderRefuses checks that ReadHeader refuses another file,
// another version, a header length beyond its bound (before allocating
// it) and a truncated or malformed header, with one message each.
func TestReadHeaderRefuses(t *testing.T) {
	art := write(t, Header{Format: FormatName, Version: Version}, &record{}, nil)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(art)) }
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "not a fitted audit (written by audit fit --save)"},
		{"another magic", edit(func(b []byte) []byte { b[0] = 'R'; return b }), "not a fitted audit (written by audit fit --save)"},
		{"no version", art[:len(magic)+2], "truncated header: unexpected EOF"},
		{"version 3", edit(func(b []byte) []byte { b[len(magic)] = 3; return b }), "format version 3, this audit reads version 4: fit again with this version"},
		{"no length", art[:len(magic)+4], "truncated header: EOF"},
		{"huge header", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(magic)+4:], maxHeader+1); return b }), "header of 67108865 bytes: the file is damaged"},
		{"short header", art[:len(magic)+10], "truncated header: unexpected EOF"},
		{"not JSON", edit(func(b []byte) []byte { b[len(magic)+8] = '['; return b }), "header: invalid character"},
	} {
		if _, err := ReadHeader(bytes.NewReader(c.file)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestReadRawRefuses checks that ReadRaw refuses a negative length and
// lengths whose sum overflows before it allocates.
func TestReadRawRefuses(t *testing.T) {
	for _, lens := range [][]int{{-1}, {math.MaxInt / 8, 1}, {1, math.MaxInt}} {
		if _, err := NewBodyReader(bytes.NewReader(nil)).ReadRaw(lens); err == nil || err.Error() != "an array length out of range: the file is damaged" {
			t.Errorf("lengths %v: error %v, want one saying a length is out of range", lens, err)
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
