package graph

import (
	"fmt"
	"strings"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// DType is the element kind of a Tensor. Every floating-point ONNX type
// (float16, bfloat16, float, double) is held as Float, in float64; every
// integer and boolean type is held as Int, in int64.
type DType uint8

const (
	// Float marks a tensor whose values are in F.
	Float DType = iota
	// Int marks a tensor whose values are in I (integers and booleans).
	Int
)

func (d DType) String() string {
	switch d {
	case Float:
		return "float"
	case Int:
		return "int"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Tensor is a dense row-major n-dimensional array. A tensor with an empty
// Shape is a scalar and holds one value. Exactly one of F and I is used,
// according to DType, and its length is the product of Shape.
type Tensor struct {
	DType DType
	Shape []int
	F     []float64
	I     []int64
}

// NewFloat returns a Float tensor of the given shape backed by data. A nil
// data is allocated; otherwise len(data) must equal the product of shape.
func NewFloat(shape []int, data []float64) *Tensor {
	n := numel(shape)
	if data == nil {
		data = make([]float64, n)
	}
	if len(data) != n {
		panic(fmt.Sprintf("graph: NewFloat: %d values for shape %v", len(data), shape))
	}
	return &Tensor{DType: Float, Shape: append([]int(nil), shape...), F: data}
}

// NewInt returns an Int tensor of the given shape backed by data. A nil data
// is allocated; otherwise len(data) must equal the product of shape.
func NewInt(shape []int, data []int64) *Tensor {
	n := numel(shape)
	if data == nil {
		data = make([]int64, n)
	}
	if len(data) != n {
		panic(fmt.Sprintf("graph: NewInt: %d values for shape %v", len(data), shape))
	}
	return &Tensor{DType: Int, Shape: append([]int(nil), shape...), I: data}
}

// Len returns the number of elements, the product of the shape.
func (t *Tensor) Len() int { return numel(t.Shape) }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.Shape) }

// Float64s returns the values as float64, converting Int values.
func (t *Tensor) Float64s() []float64 {
	if t.DType == Float {
		return t.F
	}
	out := make([]float64, len(t.I))
	for i, v := range t.I {
		out[i] = float64(v)
	}
	return out
}

// Int64s returns the values as int64, truncating Float values toward zero.
func (t *Tensor) Int64s() []int64 {
	if t.DType == Int {
		return t.I
	}
	out := make([]int64, len(t.F))
	for i, v := range t.F {
		out[i] = int64(v)
	}
	return out
}

// String formats the tensor's kind and shape, for diagnostics.
func (t *Tensor) String() string {
	return fmt.Sprintf("%s%s", t.DType, shapeString(t.Shape))
}

// numel is the product of the dimensions of shape (1 for a scalar).
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// stridesOf returns the row-major strides of shape.
func stridesOf(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return errs.Elide("["+strings.Join(parts, " ")+"]", errs.ValueBytes)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
