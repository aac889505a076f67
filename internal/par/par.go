// Package par runs independent work items on a bounded number of
// goroutines, with one rule for errors and cancellation shared by every
// parallel loop of graph and hvp:
//
//   - items are taken in increasing order, one at a time, by up to the
//     given number of workers; worker 0 is the calling goroutine;
//   - the first error an item returns wins: no further item starts, and
//     it is returned once the items already running have finished;
//   - a cancelled context stops new items the same way, and its error is
//     returned (unless an item's error came first);
//   - a panic in an item stops new items and is re-raised on the calling
//     goroutine as a *Panic holding the panic value and the stack of the
//     goroutine that panicked, so that a caller's recover sees both (the
//     calling goroutine's own stack ends at For); a panic wins over an
//     error returned by another item;
//   - nothing outlives the call: every goroutine it starts has returned.
//
// Each worker has an index, so that callers can keep one set of buffers
// (or one evaluation State) per worker without locking.
package par

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Panic is the value For panics with when an item panicked: the item's
// panic value and the stack of the worker that ran it, taken where it
// panicked. A panic in a nested For reaches the outer caller as the
// inner *Panic, with the innermost stack.
type Panic struct {
	Value any    // the value the item panicked with
	Stack []byte // the panicking worker's stack, as debug.Stack writes it
}

// Error is the panic value and the worker's stack, as the runtime would
// print them for an unrecovered panic.
func (p *Panic) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value when it is an error (such as a
// runtime.Error), so that errors.As finds it.
func (p *Panic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// capture is the *Panic for a value recovered on the current goroutine:
// the value with this goroutine's stack, or v itself when it is already
// a *Panic from a nested For.
func capture(v any) *Panic {
	if p, ok := v.(*Panic); ok {
		return p
	}
	return &Panic{Value: v, Stack: debug.Stack()}
}

// For calls f(w, i) for every i in [0, n), on up to workers goroutines
// (at least one, at most n); w in [0, workers) names the goroutine running
// the item, and one worker runs one item at a time. It returns the first
// error as described in the package comment. A nil ctx is not allowed;
// pass context.Background() for work that cannot be cancelled.
func For(ctx context.Context, n, workers int, f func(w, i int) error) error {
	workers = max(1, min(workers, n))
	if n <= 0 {
		return ctx.Err()
	}
	var (
		next   atomic.Int64
		stop   atomic.Bool
		once   sync.Once
		first  error
		pOnce  sync.Once
		panicV *Panic
	)
	fail := func(err error) {
		once.Do(func() { first = err })
		stop.Store(true)
	}
	run := func(w int) {
		defer func() {
			if v := recover(); v != nil {
				p := capture(v) // here, while the stack still holds the item's frames
				pOnce.Do(func() { panicV = p })
				stop.Store(true)
			}
		}()
		for !stop.Load() {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			if err := ctx.Err(); err != nil {
				fail(err)
				return
			}
			if err := f(w, i); err != nil {
				fail(err)
				return
			}
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(w)
		}()
	}
	run(0)
	wg.Wait()
	if panicV != nil {
		panic(panicV)
	}
	return first
}

// Ranges splits [0, n) into at most chunks contiguous ranges of nearly
// equal length and calls f(lo, hi) on each, one goroutine per range (the
// first on the calling goroutine). f must write only to positions in its
// own range. It is For for loops that cannot fail.
func Ranges(n, chunks int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunks = max(1, min(chunks, n))
	step := (n + chunks - 1) / chunks
	_ = For(context.Background(), (n+step-1)/step, chunks, func(_, c int) error {
		f(c*step, min(n, (c+1)*step))
		return nil
	})
}
