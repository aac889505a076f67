package graph

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Sentinel errors wrapped by the errors this package returns; test for them
// with errors.Is.
var (
	// ErrUnsupportedOp: the model uses an operator (or operator domain) that
	// the graph does not implement.
	ErrUnsupportedOp = errors.New("unsupported operator")
	// ErrAttr: an attribute is missing, of the wrong kind, or has a value the
	// operator does not accept.
	ErrAttr = errors.New("bad attribute")
	// ErrShape: an input does not have the shape or rank the operator needs.
	ErrShape = errors.New("shape mismatch")
	// ErrInput: the values given to Run do not match the graph's inputs.
	ErrInput = errors.New("bad input")
	// ErrNotDifferentiable: an integer value is computed from the parameters
	// or the float inputs, which the graph cannot differentiate or fold.
	ErrNotDifferentiable = errors.New("not differentiable")
	// ErrNotSeparable: a batched program cannot be split into per-example
	// gradients (some value mixes examples, or parameters meet the data in
	// a way Program.PerExample does not handle).
	ErrNotSeparable = errors.New("examples not separable")
)

// NodeError is an error about one node of the graph.
type NodeError struct {
	Node   string // the node's name, or its first output when it has none
	OpType string
	Err    error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("node %q (%s): %v", e.Node, e.OpType, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// ErrorList is a list of errors found in one pass, so that a model with
// several problems is reported in one run. It is the module's one list
// type (errs.List), which blocks.ErrorList is too.
type ErrorList = errs.List

// attrErr is a problem with a node's attribute, wrapping ErrAttr; the
// shapes and value lists among args print elided (valueArgs).
func attrErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrAttr, fmt.Sprintf(format, valueArgs(args)...))
}

// shapeErr is a problem with the shapes of a node's inputs, wrapping
// ErrShape; the shapes and value lists among args print elided
// (valueArgs).
func shapeErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrShape, fmt.Sprintf(format, valueArgs(args)...))
}

// valueArgs is args with each slice among them that is not an error (a
// shape, a list of values) as errs.Value, so that a message prints at
// most errs.ValueBytes bytes of each: a 100,000-dimension shape does not
// make a 400 kB message.
func valueArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
		if _, isErr := a.(error); isErr {
			continue
		}
		if k := reflect.ValueOf(a).Kind(); k == reflect.Slice || k == reflect.Array {
			out[i] = errs.Value(a)
		}
	}
	return out
}
