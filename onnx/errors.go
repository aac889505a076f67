package onnx

import "errors"

// Sentinel errors wrapped by the errors of this package; test for them with
// errors.Is. Errors about the graph itself (unsupported operators, values
// that no node produces) come from graph.New and wrap the graph package's
// sentinels, such as graph.ErrUnsupportedOp.
var (
	// ErrInvalid: the bytes are not a well-formed ONNX model or tensor
	// (truncated, random, inconsistent), or the model breaks a rule of the
	// format, such as an initializer whose values do not match its dims.
	ErrInvalid = errors.New("not a valid ONNX model")
	// ErrUnsupported: the model is valid but uses a feature we do not
	// read, such as string or complex tensors or sequence inputs.
	ErrUnsupported = errors.New("not supported")
	// ErrExternalData: tensors keep their values in a separate file that
	// cannot be read: missing, outside the model's folder, shorter than
	// the model says, or beside a model decoded from bytes (external.go).
	ErrExternalData = errors.New("tensors stored outside the .onnx file could not be read")
)
