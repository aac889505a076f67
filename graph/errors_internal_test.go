package graph

import (
	"errors"
	"strings"
	"testing"
)

// TestLongShapeMessages checks that a message about a 100,000-dimension
// shape is a few hundred bytes where it is built, with the shape's
// beginning and end: the shape errors of the op table (shapeErr, which
// every op's checks use), the budget check, and Tensor.String.
func TestLongShapeMessages(t *testing.T) {
	long := make([]int, 100_000)
	for i := range long {
		long[i] = 1
	}
	neg := append(long[:len(long):len(long)], -3)
	big := make([]int, 100_000)
	for i := range big {
		big[i] = 2
	}
	_, errNeg := CheckShape(neg)
	_, errBig := CheckShape(big)
	for _, c := range []struct {
		name string
		err  error
		is   error
		tail string
	}{
		{"negative dimension", errNeg, ErrShape, " 1 -3]"},
		{"too many elements", errBig, ErrTooLarge, "(1 GiB of float64) for one tensor"},
		{"two shapes, %v and %d", shapeErr("cannot reshape %v to %d elements, %d", long, 5, big), ErrShape, "2 2]"},
	} {
		if c.err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		msg := c.err.Error()
		if len(msg) > 600 || !errors.Is(c.err, c.is) || !strings.Contains(msg, "[1 1 1") && !strings.Contains(msg, "[2 2 2") ||
			!strings.Contains(msg, "bytes elided") || !strings.Contains(msg, c.tail) {
			t.Errorf("%s: %d bytes: %.400q", c.name, len(msg), msg)
		}
	}
	if s := NewFloat(long, make([]float64, 1)).String(); len(s) > 250 || !strings.HasPrefix(s, "float[1 1 1") || !strings.HasSuffix(s, "1 1]") {
		t.Errorf("Tensor.String: %d bytes: %.300q", len(s), s)
	}
	// Short shapes print whole, as before.
	if got, want := shapeErr("cannot reshape %v to %v", []int{2, 3}, []int64{6}).Error(), ErrShape.Error()+": cannot reshape [2 3] to [6]"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
