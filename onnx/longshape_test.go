package onnx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestReadTensorLongDims checks that a tensor whose 100,000 dims do not
// match its values is refused in a message of a few hundred bytes, the
// dims' middle elided, not the 200 kB of the dims printed whole.
func TestReadTensorLongDims(t *testing.T) {
	dims := make([]int64, 100_000)
	for i := range dims {
		dims[i] = 1
	}
	_, _, err := onnx.ReadTensor(floatsPB("x", dims, 1, 2))
	if err == nil {
		t.Fatal("two values for dims that hold one: no error")
	}
	msg := err.Error()
	if len(msg) > 400 || !errors.Is(err, onnx.ErrInvalid) || !strings.Contains(msg, "2 values for dims [1 1 1") ||
		!strings.Contains(msg, "bytes elided") || !strings.HasSuffix(msg, "1 1], which hold 1") {
		t.Errorf("%d bytes: %.500q", len(msg), msg)
	}
}
