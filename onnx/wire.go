package onnx

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"unicode/utf8"
)

// Protobuf wire types (https://protobuf.dev/programming-guides/encoding/).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// field is one field of a protobuf message as it appears on the wire.
type field struct {
	num  int32  // field number, >= 1
	wire int8   // wire type
	val  uint64 // the payload of a varint, fixed32 or fixed64 field
	data []byte // the payload of a length-delimited field
	at   int    // offset of the payload in the whole file, from 0
	raw  []byte // the whole field, tag included
}

// fields walks the fields of the message b, which starts at offset base of
// the file. It stops at the first malformed field, yielding an error that
// wraps ErrInvalid.
func fields(b []byte, base int) iter.Seq2[field, error] {
	return func(yield func(field, error) bool) {
		for off := 0; off < len(b); {
			f, n, err := readField(b[off:], base+off)
			if err != nil {
				yield(field{}, err)
				return
			}
			if !yield(f, nil) {
				return
			}
			off += n
		}
	}
}

// readField reads the field at the start of b, found at offset at of the
// file, and returns it with its length in bytes.
func readField(b []byte, at int) (field, int, error) {
	tag, n := binary.Uvarint(b)
	if n <= 0 {
		return field{}, 0, wireErr(at, "bad field tag")
	}
	num, wire := tag>>3, int8(tag&7)
	if num == 0 || num > math.MaxInt32 {
		return field{}, 0, wireErr(at, "invalid field number %d", num)
	}
	f := field{num: int32(num), wire: wire, at: at + n}
	rest := b[n:]
	switch wire {
	case wireVarint:
		v, m := binary.Uvarint(rest)
		if m <= 0 {
			return field{}, 0, wireErr(at, "field %d: truncated or overlong varint", num)
		}
		f.val = v
		n += m
	case wireFixed64:
		if len(rest) < 8 {
			return field{}, 0, wireErr(at, "field %d: truncated fixed64", num)
		}
		f.val = binary.LittleEndian.Uint64(rest)
		n += 8
	case wireFixed32:
		if len(rest) < 4 {
			return field{}, 0, wireErr(at, "field %d: truncated fixed32", num)
		}
		f.val = uint64(binary.LittleEndian.Uint32(rest))
		n += 4
	case wireBytes:
		l, m := binary.Uvarint(rest)
		if m <= 0 {
			return field{}, 0, wireErr(at, "field %d: bad length", num)
		}
		if l > uint64(len(rest)-m) {
			return field{}, 0, wireErr(at, "field %d: length %d runs past the end of the data (truncated file?)", num, l)
		}
		f.data = rest[m : m+int(l)]
		f.at = at + n + m
		n += m + int(l)
	case 3, 4:
		return field{}, 0, wireErr(at, "field %d uses the deprecated group encoding", num)
	default:
		return field{}, 0, wireErr(at, "field %d: invalid wire type %d", num, wire)
	}
	f.raw = b[:n]
	return f, n, nil
}

func wireErr(at int, format string, args ...any) error {
	return fmt.Errorf("%w: byte %d: %s", ErrInvalid, at, fmt.Sprintf(format, args...))
}

// str returns the payload of a string field. Like the protobuf runtime
// that onnx-go uses, it rejects invalid UTF-8.
func (f field) str() (string, error) {
	if !utf8.Valid(f.data) {
		return "", wireErr(f.at, "field %d: invalid UTF-8 in a string", f.num)
	}
	return string(f.data), nil
}

// The append functions below read a repeated scalar field, packed (one
// length-delimited field) or not (one field per value). They report false
// when the field has a wire type that cannot hold the values; the protobuf
// runtime skips such a field as unknown, and so do we.

// appendVarints appends the varint values of f to dst.
func appendVarints(dst []uint64, f field) ([]uint64, bool, error) {
	switch f.wire {
	case wireVarint:
		return append(dst, f.val), true, nil
	case wireBytes:
		b := f.data
		for len(b) > 0 {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return dst, true, wireErr(f.at+len(f.data)-len(b), "field %d: bad packed varint", f.num)
			}
			dst = append(dst, v)
			b = b[n:]
		}
		return dst, true, nil
	}
	return dst, false, nil
}

// appendFixed32 appends the fixed32 values of f to dst.
func appendFixed32(dst []uint32, f field) ([]uint32, bool, error) {
	switch f.wire {
	case wireFixed32:
		return append(dst, uint32(f.val)), true, nil
	case wireBytes:
		if len(f.data)%4 != 0 {
			return dst, true, wireErr(f.at, "field %d: packed fixed32 data of %d bytes", f.num, len(f.data))
		}
		for b := f.data; len(b) > 0; b = b[4:] {
			dst = append(dst, binary.LittleEndian.Uint32(b))
		}
		return dst, true, nil
	}
	return dst, false, nil
}

// appendFixed64 appends the fixed64 values of f to dst.
func appendFixed64(dst []uint64, f field) ([]uint64, bool, error) {
	switch f.wire {
	case wireFixed64:
		return append(dst, f.val), true, nil
	case wireBytes:
		if len(f.data)%8 != 0 {
			return dst, true, wireErr(f.at, "field %d: packed fixed64 data of %d bytes", f.num, len(f.data))
		}
		for b := f.data; len(b) > 0; b = b[8:] {
			dst = append(dst, binary.LittleEndian.Uint64(b))
		}
		return dst, true, nil
	}
	return dst, false, nil
}

// appendBytesField appends a length-delimited field num holding data.
func appendBytesField(dst []byte, num int32, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(num)<<3|wireBytes)
	dst = binary.AppendUvarint(dst, uint64(len(data)))
	return append(dst, data...)
}
