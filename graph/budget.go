package graph

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// MaxElements is the size budget of one tensor of a compiled program: at
// most 2^27 elements (134,217,728; 1 GiB of float64). Compile checks every
// shape it folds, expands or allocates against it before allocating, so
// that a model whose shape arithmetic asks for 10^9 elements or more
// (a ConstantOfShape, Expand or Range bomb, or a shape whose product
// overflows) fails with an error naming the node and the numbers instead
// of exhausting memory. Real models stay far below it: the audit feeds
// them batches of a few thousand steps.
const MaxElements = 1 << 27

// ErrTooLarge is wrapped by the error for a tensor of more than
// MaxElements elements.
var ErrTooLarge = errors.New("tensor too large")

// CheckShape returns the number of elements of shape, or an error
// wrapping ErrShape for a negative dimension and ErrTooLarge when the
// product exceeds MaxElements (overflow included).
func CheckShape(shape []int) (int, error) {
	n, zero, over := uint64(1), false, false
	for _, d := range shape {
		switch {
		case d < 0:
			return 0, shapeErr("negative dimension in shape %v", shape)
		case d == 0:
			zero = true
		case !over:
			hi, lo := bits.Mul64(n, uint64(d))
			n, over = lo, hi != 0 || lo > math.MaxInt64
		}
	}
	switch {
	case zero:
		return 0, nil
	case over:
		return 0, fmt.Errorf("%w: shape %v holds more than 2^63 elements, more than the budget of %d (1 GiB of float64) for one tensor", ErrTooLarge, errs.Value(shape), MaxElements)
	case n > MaxElements:
		return 0, fmt.Errorf("%w: shape %v holds %d elements, more than the budget of %d (1 GiB of float64) for one tensor", ErrTooLarge, errs.Value(shape), n, MaxElements)
	}
	return int(n), nil
}

// budgetPanic carries a shape error out of the compiler's allocation
// points (emit, newSlot), which return no error; Compile recovers it and
// returns it as a *NodeError.
type budgetPanic struct{ err error }

// fit panics with a budgetPanic when shape is over budget.
func (c *compiler) fit(shape []int) {
	if _, err := CheckShape(shape); err != nil {
		panic(budgetPanic{err})
	}
}

// recovered turns a budgetPanic into the error Compile returns, naming the
// node being lowered; it returns nil for any other panic value.
func (c *compiler) recovered(r any) error {
	bp, ok := r.(budgetPanic)
	if !ok {
		return nil
	}
	if c == nil || c.node == nil {
		return fmt.Errorf("graph: %w", bp.err)
	}
	return &NodeError{Node: c.node.Label(), OpType: c.node.OpType, Err: bp.err}
}

// slotOverhead is the memory of one slot of a State besides its values
// (its Tensor header, shape and bookkeeping), in bytes, as measured on an
// RNN unrolled over 200,000 steps.
const slotOverhead = 160

// StateBytes estimates the memory of one State of the program: the float64
// values of its step results and the bookkeeping of each slot. Running
// with derivatives (Tangent, Backward) holds about three times as much.
// Programs unrolled over long sequences grow linearly with the number of
// steps, and callers check this before they run a program on the longest
// sequence of their data.
func (p *Program) StateBytes() int {
	n := 0
	for _, i := range p.owners {
		n += 8 * numel(p.slots[i].shape)
	}
	return n + slotOverhead*len(p.slots)
}
