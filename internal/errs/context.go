package errs

import "fmt"

// Context is an error with the context it happened in written in front of
// its message, as fmt.Errorf("onnx: %s: %w", path, err) writes it, but
// with the context kept as a value: a program that writes Err in its own
// words (a Fixer's options as its flags, a List one problem a line)
// writes Prefix in front as it is, without taking messages apart.
type Context struct {
	// Prefix is the context with its separator: "onnx: m.onnx: ".
	Prefix string
	// Err is the error the context is of.
	Err error
}

// Wrapf returns err in the context fmt.Sprintf(format, args...), which
// ends with its separator: Wrapf(err, "onnx: %s: ", path).
func Wrapf(err error, format string, args ...any) error {
	return &Context{Prefix: fmt.Sprintf(format, args...), Err: err}
}

// Error is Prefix followed by Err's message.
func (e *Context) Error() string { return e.Prefix + e.Err.Error() }

// Unwrap returns Err.
func (e *Context) Unwrap() error { return e.Err }
