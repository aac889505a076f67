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
//     goroutine, so that a caller's recover sees it;
//   - nothing outlives the call: every goroutine it starts has returned.
//
// Each worker has an index, so that callers can keep one set of buffers
// (or one evaluation State) per worker without locking.
package par

import (
	"context"
	"sync"
	"sync/atomic"
)

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
		next    atomic.Int64
		stop    atomic.Bool
		once    sync.Once
		first   error
		panicV  any
		paniced bool
	)
	fail := func(err error) {
		once.Do(func() { first = err })
		stop.Store(true)
	}
	run := func(w int) {
		defer func() {
			if v := recover(); v != nil {
				once.Do(func() { panicV, paniced = v, true })
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
	if paniced {
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
