package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/internal/par"
)

// TestInternalErrorStack checks that a panic in a parallel worker becomes
// an *InternalError whose stack is the worker's, where it panicked, not
// the stack of the goroutine that ran the loop (which ends in par.For).
func TestInternalErrorStack(t *testing.T) {
	run := func() (err error) {
		defer catchInternal(&err)
		return par.For(context.Background(), 8, 2, func(w, i int) error {
			if i == 5 {
				panicInWorker()
			}
			return nil
		})
	}
	var ie *InternalError
	if err := run(); !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an *InternalError", err)
	}
	if ie.Value != "boom" {
		t.Errorf("value %v, want boom", ie.Value)
	}
	if !strings.Contains(string(ie.Stack), "audit.panicInWorker") {
		t.Errorf("the stack does not show the worker's frame:\n%s", ie.Stack)
	}
	if strings.Contains(ie.Error(), "\n") {
		t.Errorf("the message is not one line: %q", ie.Error())
	}

	// A panic outside a parallel loop keeps this goroutine's stack.
	direct := func() (err error) {
		defer catchInternal(&err)
		panicInWorker()
		return nil
	}
	if err := direct(); !errors.As(err, &ie) || !strings.Contains(string(ie.Stack), "audit.panicInWorker") {
		t.Errorf("direct panic: %v, stack:\n%s", err, ie.Stack)
	}
}

//go:noinline
func panicInWorker() { panic("boom") }
