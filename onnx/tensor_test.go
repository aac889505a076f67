package onnx_test

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

func TestReadTensor(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	f64raw := le.AppendUint64(le.AppendUint64(nil, math.Float64bits(0.1)), math.Float64bits(math.Inf(-1)))
	for _, tc := range []struct {
		name  string
		data  pb
		shape []int
		f     []float64 // for Float tensors
		i     []int64   // for Int tensors
	}{
		{"float raw", tensorPB("x", 1, []int64{2, 2}, f32raw(1, -2, 0.5, float32(math.Inf(1)))), []int{2, 2},
			[]float64{1, -2, 0.5, math.Inf(1)}, nil},
		{"float_data", floatsPB("x", []int64{3}, 1, 2, 3), []int{3}, []float64{1, 2, 3}, nil},
		{"float_data unpacked", pb{}.packed(1, 2).varint(2, 1).fixed32(4, math.Float32bits(7)).fixed32(4, math.Float32bits(8)),
			[]int{2}, []float64{7, 8}, nil},
		{"scalar", floatsPB("x", nil, 4), nil, []float64{4}, nil},
		{"empty", tensorPB("x", 1, []int64{0, 3}, nil), []int{0, 3}, []float64{}, nil},
		{"double raw", tensorPB("x", 11, []int64{2}, f64raw), []int{2}, []float64{0.1, math.Inf(-1)}, nil},
		{"double_data", pb{}.packed(1, 1).varint(2, 11).bytes(10, le.AppendUint64(nil, math.Float64bits(0.1))),
			[]int{1}, []float64{0.1}, nil},
		{"float16 raw", tensorPB("x", 10, []int64{3}, []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c}), []int{3},
			[]float64{1, -2, math.Inf(1)}, nil},
		{"float16 int32_data", pb{}.packed(1, 2).varint(2, 10).packed(5, 0x3c00, 0x3555), []int{2},
			[]float64{1, 0.333251953125}, nil},
		{"bfloat16 raw", tensorPB("x", 16, []int64{2}, []byte{0x80, 0x3f, 0x40, 0xc0}), []int{2}, []float64{1, -3}, nil},
		{"bfloat16 int32_data", pb{}.packed(1, 1).varint(2, 16).packed(5, 0x3f80), []int{1}, []float64{1}, nil},
		{"int8 raw", tensorPB("x", 3, []int64{3}, []byte{0xff, 0x7f, 0x80}), []int{3}, nil, []int64{-1, 127, -128}},
		{"int8 int32_data", pb{}.packed(1, 2).varint(2, 3).packed(5, -5, 6), []int{2}, nil, []int64{-5, 6}},
		{"uint8 raw", tensorPB("x", 2, []int64{2}, []byte{0xff, 1}), []int{2}, nil, []int64{255, 1}},
		{"int16 raw", tensorPB("x", 5, []int64{2}, []byte{0xff, 0xff, 0x00, 0x80}), []int{2}, nil, []int64{-1, -32768}},
		{"uint16 raw", tensorPB("x", 4, []int64{1}, []byte{0xff, 0xff}), []int{1}, nil, []int64{65535}},
		{"int32 raw", tensorPB("x", 6, []int64{1}, le.AppendUint32(nil, math.MaxUint32)), []int{1}, nil, []int64{-1}},
		{"int32_data", pb{}.packed(1, 2).varint(2, 6).packed(5, -7, 1<<30), []int{2}, nil, []int64{-7, 1 << 30}},
		{"int64 raw", tensorPB("x", 7, []int64{1}, le.AppendUint64(nil, 1<<62)), []int{1}, nil, []int64{1 << 62}},
		{"int64_data", pb{}.packed(1, 2).varint(2, 7).packed(7, -1, 5), []int{2}, nil, []int64{-1, 5}},
		{"uint32 raw", tensorPB("x", 12, []int64{1}, le.AppendUint32(nil, math.MaxUint32)), []int{1}, nil, []int64{math.MaxUint32}},
		{"uint64_data", pb{}.packed(1, 1).varint(2, 13).packed(11, 1<<40), []int{1}, nil, []int64{1 << 40}},
		{"bool raw", tensorPB("x", 9, []int64{4}, []byte{1, 0, 0, 1}), []int{4}, nil, []int64{1, 0, 0, 1}},
		{"bool int32_data", pb{}.packed(1, 3).varint(2, 9).packed(5, 1, 0, 1), []int{3}, nil, []int64{1, 0, 1}},
	} {
		_, x, err := onnx.ReadTensor(tc.data)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(x.Shape, tc.shape) && !(len(x.Shape) == 0 && len(tc.shape) == 0) {
			t.Errorf("%s: shape %v, want %v", tc.name, x.Shape, tc.shape)
		}
		switch {
		case tc.f != nil:
			if x.DType != graph.Float || !slices.Equal(x.F, tc.f) {
				t.Errorf("%s: got %v %v, want float %v", tc.name, x.DType, x.F, tc.f)
			}
		case x.DType != graph.Int || !slices.Equal(x.I, tc.i):
			t.Errorf("%s: got %v %v, want int %v", tc.name, x.DType, x.I, tc.i)
		}
	}
}

func TestReadTensorName(t *testing.T) {
	t.Parallel()
	name, x, err := onnx.ReadTensor(floatsPB("weights", []int64{1}, 3))
	if err != nil || name != "weights" || x.F[0] != 3 {
		t.Errorf("got %q %v %v, want weights [3]", name, x, err)
	}
}

func TestReadTensorBad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data pb
		is   error
		want string
	}{
		{"truncated", floatsPB("x", []int64{3}, 1, 2, 3)[:10], onnx.ErrInvalid, "onnx: not a valid ONNX model: byte "},
		{"no type", pb{}.packed(1, 1), onnx.ErrInvalid, "tensor: no data type"},
		{"count", floatsPB("x", []int64{2, 2}, 1, 2, 3), onnx.ErrInvalid, `tensor "x": 3 values for dims [2 2], which hold 4`},
		{"no data", pb{}.packed(1, 2).varint(2, 1), onnx.ErrInvalid, "0 values for dims [2]"},
		{"raw and typed", floatsPB("x", []int64{1}, 1).bytes(9, f32raw(2)), onnx.ErrInvalid, "both raw_data and typed values"},
		{"string", pb{}.packed(1, 1).varint(2, 8).str(6, "a"), onnx.ErrUnsupported, "element type string is not supported"},
		{"complex128", tensorPB("z", 15, []int64{1}, make([]byte, 16)), onnx.ErrUnsupported, "element type complex128 is not supported"},
		{"float8", tensorPB("z", 17, []int64{1}, make([]byte, 1)), onnx.ErrUnsupported, "element type float8e4m3fn is not supported"},
		{"uint64 overflow", pb{}.packed(1, 1).varint(2, 13).packed(11, -1), onnx.ErrUnsupported, "does not fit in an int64"},
		{"segment", floatsPB("x", []int64{1}, 1).bytes(3, pb{}.varint(1, 0)), onnx.ErrUnsupported, "segmented tensors are not supported"},
		{"external", pb{}.packed(1, 1).varint(2, 1).str(8, "w").varint(14, 1), onnx.ErrExternalData, `tensor "w": tensors stored outside`},
		{"huge dims", pb{}.packed(1, 1<<40, 1<<40).varint(2, 1), onnx.ErrInvalid, "too many values"},
	} {
		_, x, err := onnx.ReadTensor(tc.data)
		if err == nil {
			t.Errorf("%s: got %v, want an error", tc.name, x)
			continue
		}
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "onnx: ") {
			t.Errorf("%s: got %q, want %q wrapping %q", tc.name, err, tc.want, tc.is)
		}
	}
}
