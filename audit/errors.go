package audit

import (
	"fmt"
	"runtime/debug"

	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// This file: the errors of this package as values: the options an error
// names as its fix, and internal errors (bugs).

// Option names a field of Options (or of blocks.Options, hvp.Options)
// that fixes a problem: an *OptionError lists them, so that a program
// can name them in its own terms (cmd/audit writes its flags). It is the
// module's one option type.
type Option = errs.Option

// OptionError is a problem that changing options fixes, such as a solver
// that does not go with the curvature asked for. Its message ends with
// the options' Go names in parentheses; errors.As finds it.
type OptionError = errs.OptionError

// The fields of Options that an *OptionError may name.
const (
	OptLayout    Option = "audit.Options.Layout"
	OptSolver    Option = "audit.Options.Solver"
	OptRank      Option = "audit.Options.Rank"
	OptCurvature Option = "audit.Options.Curvature"
	OptParams    Option = "audit.Options.Params"
	OptRetrain   Option = "audit.Options.Retrain"
	OptInputs    Option = "audit.Options.Inputs"
	OptOutput    Option = "audit.Options.Output"
	OptHorizons  Option = "audit.Options.Horizons"
	// OptBlocks and OptBlockLength choose the block scheme: a scheme
	// whose every block deletes the whole training set is refused with
	// them (degenerate in degenerate.go).
	OptBlocks      Option = "audit.Options.Blocks"
	OptBlockLength Option = "audit.Options.BlockLength"
	OptWindow      Option = "audit.Options.Window"
)

// InternalError is a bug in rnnaudit met while auditing: the message says
// so in one line; Stack holds the stack of the goroutine that panicked
// (a parallel worker's, when the panic happened in one) for the bug report.
type InternalError struct {
	Value any
	Stack []byte
}

// catchInternal turns a panic into an *InternalError in *err. It must be
// deferred directly. A panic re-raised by a parallel loop
// (internal/par) brings the stack of the worker that panicked, which is
// the one a bug report needs; this goroutine's stack would end in the
// loop.
func catchInternal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if p, ok := r.(*par.Panic); ok {
		*err = &InternalError{Value: p.Value, Stack: p.Stack}
		return
	}
	*err = &InternalError{Value: r, Stack: debug.Stack()}
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("audit: internal error (please report it with the command that caused it): %v", e.Value)
}
