package onnx_test

import (
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
)

// FuzzDecode checks that any bytes give either a graph or an error, never
// a panic. The seeds are real models, hand-made ones and the bad files of
// TestDecodeBad.
func FuzzDecode(f *testing.F) {
	for _, c := range [][2]string{
		{"onnx-recurrent", "lstm_peephole"},
		{"onnx-recurrent", "gru_bidirectional_linear_before_reset_seqlens"},
		{"onnx-recurrent", "rnn_seqlens_initial_h"},
		{"onnx-conformance", "test_operator_mm"},
		{"onnx-conformance", "test_constantofshape_int_zeros"},
		{"onnx-conformance", "test_cast_FLOAT16_to_FLOAT"},
		{"onnx-conformance", "test_Linear"},
	} {
		f.Add(fixture(f, c[0], c[1]))
	}
	f.Add([]byte(lstmModel()))
	for _, tc := range badModels(nil) {
		f.Add(tc.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := onnx.Decode(data)
		if (g == nil) == (err == nil) {
			t.Fatalf("got graph %v and error %v: want exactly one", g, err)
		}
	})
}

// FuzzReadTensor checks that any bytes give either a tensor or an error,
// and that a tensor has as many values as its shape holds.
func FuzzReadTensor(f *testing.F) {
	f.Add([]byte(floatsPB("x", []int64{2}, 1, 2)))
	f.Add([]byte(tensorPB("h", 10, []int64{2}, []byte{0, 0x3c, 0, 0xc0})))
	f.Add([]byte(pb{}.packed(1, 2).varint(2, 9).packed(5, 1, 0)))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, x, err := onnx.ReadTensor(data)
		if (x == nil) == (err == nil) {
			t.Fatalf("got tensor %v and error %v: want exactly one", x, err)
		}
		if x != nil && len(x.F)+len(x.I) != x.Len() {
			t.Fatalf("tensor %v has %d values", x, len(x.F)+len(x.I))
		}
	})
}
