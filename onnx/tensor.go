package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// ReadTensor decodes a serialized TensorProto, such as the input_N.pb and
// output_N.pb files of the ONNX backend tests, and returns its name and
// value.
//
// Floating-point types (float16, bfloat16, float, double) become Float
// tensors and keep NaN and infinities; integer and boolean types become
// Int tensors, booleans as 0 and 1. The number of values must match the
// dims. Strings, complex numbers, 8-bit and 4-bit floats and data stored
// outside the file give an error wrapping ErrUnsupported or
// ErrExternalData; malformed bytes give an error wrapping ErrInvalid. The
// error message starts with "onnx: ".
func ReadTensor(data []byte) (name string, t *graph.Tensor, err error) {
	tm, err := parseTensor(data)
	if err != nil {
		return "", nil, fmt.Errorf("onnx: %w", err)
	}
	what := "tensor"
	if tm.name != "" {
		what = fmt.Sprintf("tensor %q", tm.name)
	}
	t, err = tm.decode(what)
	if err != nil {
		return tm.name, nil, fmt.Errorf("onnx: %w", err)
	}
	return tm.name, t, nil
}

// elemSize is the size in bytes of one value in raw_data, per element type.
var elemSize = map[graph.ElemType]int{
	graph.ElemFloat: 4, graph.ElemDouble: 8, graph.ElemFloat16: 2, graph.ElemBfloat16: 2,
	graph.ElemInt8: 1, graph.ElemUint8: 1, graph.ElemBool: 1,
	graph.ElemInt16: 2, graph.ElemUint16: 2,
	graph.ElemInt32: 4, graph.ElemUint32: 4,
	graph.ElemInt64: 8, graph.ElemUint64: 8,
}

// elemName names element types for messages, including those newer than
// the graph package's list.
func elemName(e graph.ElemType) string {
	switch e {
	case 17:
		return "float8e4m3fn"
	case 18:
		return "float8e4m3fnuz"
	case 19:
		return "float8e5m2"
	case 20:
		return "float8e5m2fnuz"
	case 21:
		return "uint4"
	case 22:
		return "int4"
	case 23:
		return "float4e2m1"
	}
	return e.String()
}

// decode checks the tensor and converts its values. The errors it returns
// wrap ErrInvalid, ErrUnsupported or ErrExternalData and name the tensor
// as what (such as `initializer "W"`).
func (tm *tensorMsg) decode(what string) (*graph.Tensor, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, what, fmt.Sprintf(format, args...))
	}
	if tm.external || tm.location == 1 {
		return nil, fmt.Errorf("%s: %w", what, ErrExternalData)
	}
	if tm.segment {
		return nil, fmt.Errorf("%s: segmented tensors are %w", what, ErrUnsupported)
	}
	elem := graph.ElemType(tm.dataType)
	if elem == graph.ElemUndefined {
		return nil, invalid("no data type")
	}
	size, ok := elemSize[elem]
	if !ok {
		return nil, fmt.Errorf("%s: element type %s is %w", what, elemName(elem), ErrUnsupported)
	}
	shape := make([]int, len(tm.dims))
	n := 1
	for i, d := range tm.dims {
		if d > maxDim {
			return nil, invalid("dimension %d is %d", i, int64(d))
		}
		shape[i] = int(d)
		if d != 0 && n > maxElems/int(d) {
			return nil, invalid("dims %v hold too many values", errs.Value(tm.dims))
		}
		n *= int(d)
	}

	// The values come from raw_data, or from the typed field of the type.
	var typed int
	switch elem {
	case graph.ElemFloat:
		typed = len(tm.floats)
	case graph.ElemDouble:
		typed = len(tm.doubles)
	case graph.ElemInt64:
		typed = len(tm.int64s)
	case graph.ElemUint32, graph.ElemUint64:
		typed = len(tm.uint64s)
	default:
		typed = len(tm.int32s)
	}
	raw := len(tm.raw) > 0
	if raw && typed > 0 {
		return nil, invalid("both raw_data and typed values")
	}
	count := typed
	if raw {
		if len(tm.raw)%size != 0 {
			return nil, invalid("raw_data of %d bytes for %s values of %d bytes each", len(tm.raw), elem, size)
		}
		count = len(tm.raw) / size
	}
	if count != n {
		return nil, invalid("%d %s for dims %v, which hold %d", count, plural(count, "value"), errs.Value(shape), n)
	}

	if dt, _ := elem.DType(); dt == graph.Float {
		f := make([]float64, n)
		for i := range f {
			f[i] = tm.float(elem, i, raw)
		}
		return graph.NewFloat(shape, f), nil
	}
	v := make([]int64, n)
	for i := range v {
		x, ok := tm.int(elem, i, raw)
		if !ok {
			return nil, fmt.Errorf("%s: uint64 value %d (at %d) is %w: it does not fit in an int64", what, tm.uint64At(i), i, ErrUnsupported)
		}
		v[i] = x
	}
	return graph.NewInt(shape, v), nil
}

// maxElems bounds the number of values of one tensor.
const maxElems = 1 << 40

// float returns value i of a floating-point tensor whose counts are checked.
func (tm *tensorMsg) float(elem graph.ElemType, i int, raw bool) float64 {
	le := binary.LittleEndian
	switch elem {
	case graph.ElemFloat:
		if raw {
			return float64(math.Float32frombits(le.Uint32(tm.raw[4*i:])))
		}
		return float64(math.Float32frombits(tm.floats[i]))
	case graph.ElemDouble:
		if raw {
			return math.Float64frombits(le.Uint64(tm.raw[8*i:]))
		}
		return math.Float64frombits(tm.doubles[i])
	}
	// float16 and bfloat16: raw_data, or the bits in the low half of int32_data.
	var bits uint16
	if raw {
		bits = le.Uint16(tm.raw[2*i:])
	} else {
		bits = uint16(tm.int32s[i])
	}
	if elem == graph.ElemBfloat16 {
		return float64(math.Float32frombits(uint32(bits) << 16))
	}
	return float16(bits)
}

// int returns value i of an integer or boolean tensor whose counts are
// checked, and false when a uint64 value does not fit in an int64.
func (tm *tensorMsg) int(elem graph.ElemType, i int, raw bool) (int64, bool) {
	le := binary.LittleEndian
	if raw {
		b := tm.raw
		switch elem {
		case graph.ElemInt8:
			return int64(int8(b[i])), true
		case graph.ElemUint8:
			return int64(b[i]), true
		case graph.ElemBool:
			return boolInt(b[i] != 0), true
		case graph.ElemInt16:
			return int64(int16(le.Uint16(b[2*i:]))), true
		case graph.ElemUint16:
			return int64(le.Uint16(b[2*i:])), true
		case graph.ElemInt32:
			return int64(int32(le.Uint32(b[4*i:]))), true
		case graph.ElemUint32:
			return int64(le.Uint32(b[4*i:])), true
		case graph.ElemInt64:
			return int64(le.Uint64(b[8*i:])), true
		case graph.ElemUint64:
			u := le.Uint64(b[8*i:])
			return int64(u), u <= math.MaxInt64
		}
		return 0, true
	}
	switch elem {
	case graph.ElemInt64:
		return int64(tm.int64s[i]), true
	case graph.ElemUint32:
		return int64(uint32(tm.uint64s[i])), true
	case graph.ElemUint64:
		u := tm.uint64s[i]
		return int64(u), u <= math.MaxInt64
	case graph.ElemBool:
		return boolInt(tm.int32s[i] != 0), true
	case graph.ElemUint8:
		return int64(uint8(tm.int32s[i])), true
	case graph.ElemUint16:
		return int64(uint16(tm.int32s[i])), true
	case graph.ElemInt8:
		return int64(int8(tm.int32s[i])), true
	case graph.ElemInt16:
		return int64(int16(tm.int32s[i])), true
	}
	return int64(int32(tm.int32s[i])), true // int32
}

// uint64At returns value i of a uint64 tensor.
func (tm *tensorMsg) uint64At(i int) uint64 {
	if len(tm.raw) > 0 {
		return binary.LittleEndian.Uint64(tm.raw[8*i:])
	}
	return tm.uint64s[i]
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// float16 converts IEEE 754 half-precision bits to a float64, exactly.
func float16(h uint16) float64 {
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	var v float64
	switch exp {
	case 0: // zero and subnormals: frac * 2^-24
		v = math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	default: // (1024 + frac) * 2^(exp-25)
		v = math.Ldexp(1024+frac, exp-25)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}
