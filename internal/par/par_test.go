package par

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForRunsEveryItemOnce checks that every item runs exactly once, on a
// worker index below the limit, with one item per worker at a time.
func TestForRunsEveryItemOnce(t *testing.T) {
	for _, c := range []struct{ n, workers int }{{0, 3}, {1, 1}, {1, 8}, {10, 1}, {10, 3}, {1000, 4}, {5, 0}} {
		counts := make([]atomic.Int32, c.n)
		busy := make([]atomic.Int32, max(1, c.workers))
		err := For(context.Background(), c.n, c.workers, func(w, i int) error {
			if w < 0 || w >= max(1, c.workers) {
				t.Errorf("n=%d workers=%d: worker %d", c.n, c.workers, w)
				return nil
			}
			if busy[w].Add(1) != 1 {
				t.Errorf("n=%d workers=%d: worker %d runs two items at once", c.n, c.workers, w)
			}
			counts[i].Add(1)
			busy[w].Add(-1)
			return nil
		})
		if err != nil {
			t.Fatalf("n=%d workers=%d: %v", c.n, c.workers, err)
		}
		for i := range counts {
			if got := counts[i].Load(); got != 1 {
				t.Fatalf("n=%d workers=%d: item %d ran %d times", c.n, c.workers, i, got)
			}
		}
	}
}

// TestForFirstErrorWins checks that an item's error is returned and that
// items stop soon after it. With one worker the items run in order, so
// exactly the eleven up to the failing one start. With two, the other
// worker stops after the item it is running when the error is recorded;
// how many it starts before then depends on the scheduler (a worker can
// be descheduled between its item's return and the recording), so each
// item takes a millisecond and the bound is loose: without the stop,
// all 1000 would start.
func TestForFirstErrorWins(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		workers int
		sleep   time.Duration
		atMost  int32
	}{
		{1, 0, 11},
		{2, time.Millisecond, 100},
	} {
		var started atomic.Int32
		err := For(context.Background(), 1000, c.workers, func(w, i int) error {
			started.Add(1)
			if i == 10 {
				return boom
			}
			time.Sleep(c.sleep)
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("workers=%d: err = %v, want boom", c.workers, err)
		}
		if n := started.Load(); n > c.atMost || (c.workers == 1 && n != c.atMost) {
			t.Errorf("workers=%d: %d items started; want at most %d", c.workers, n, c.atMost)
		}
	}
}

// TestForCancel checks that a cancelled context stops new items and is
// returned, and that an item error before it takes precedence.
func TestForCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := For(ctx, 1000, 3, func(w, i int) error {
		if ran.Add(1) == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := ran.Load(); n > 5+3 {
		t.Errorf("%d items ran after cancelling at the fifth", n)
	}
	if err := For(ctx, 10, 2, func(w, i int) error {
		t.Error("an item ran under a cancelled context")
		return nil
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("already cancelled: err = %v", err)
	}
}

// TestForPanic checks that a panic reaches the caller as a *Panic with
// its value and the stack of the worker that panicked, from a worker
// goroutine and from the calling one, and through a nested For.
func TestForPanic(t *testing.T) {
	type marker struct{}
	for _, c := range []struct {
		name    string
		workers int
		nested  bool
	}{{"calling goroutine", 1, false}, {"worker goroutine", 4, false}, {"nested", 2, true}} {
		t.Run(c.name, func(t *testing.T) {
			p := recoverPanic(func() {
				_ = For(context.Background(), 100, c.workers, func(w, i int) error {
					if c.nested {
						return For(context.Background(), 10, 2, func(_, j int) error {
							if i == 7 && j == 3 {
								panicInItem(marker{})
							}
							return nil
						})
					}
					if i == 7 {
						panicInItem(marker{})
					}
					return nil
				})
				t.Fatal("For returned after a panic")
			})
			if p == nil {
				t.Fatal("no *Panic recovered")
			}
			if p.Value != (marker{}) {
				t.Errorf("value %v, want the item's panic value", p.Value)
			}
			if !strings.Contains(string(p.Stack), "par.panicInItem") {
				t.Errorf("the stack does not show the item that panicked:\n%s", p.Stack)
			}
		})
	}
}

// TestForPanicWins checks that a panic is not lost when another item
// returned an error first.
func TestForPanicWins(t *testing.T) {
	p := recoverPanic(func() {
		_ = For(context.Background(), 2, 2, func(w, i int) error {
			if i == 0 {
				return errors.New("fail")
			}
			panicInItem("boom")
			return nil
		})
	})
	// Item 1 may not start once item 0 failed; when it ran, its panic wins.
	if p != nil && p.Value != "boom" {
		t.Errorf("value %v, want boom", p.Value)
	}
}

// TestPanicUnwrap checks that errors.As finds a runtime error inside.
func TestPanicUnwrap(t *testing.T) {
	p := recoverPanic(func() {
		_ = For(context.Background(), 3, 2, func(w, i int) error {
			var s []int
			_ = s[i+5]
			return nil
		})
	})
	var re runtime.Error
	if p == nil || !errors.As(p, &re) {
		t.Fatalf("recovered %v, want a *Panic wrapping a runtime.Error", p)
	}
}

// panicInItem panics with v, from a frame the tests look for in the stack.
//
//go:noinline
func panicInItem(v any) { panic(v) }

// recoverPanic runs f and returns the *Panic it panicked with, nil when it
// did not panic; another panic value fails the caller's test by panicking.
func recoverPanic(f func()) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			var ok bool
			if p, ok = v.(*Panic); !ok {
				panic(v)
			}
		}
	}()
	f()
	return nil
}

// TestForNoLeak checks that no goroutine outlives For, even when items
// fail or block until the failure.
func TestForNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	var mu sync.Mutex
	for rep := 0; rep < 20; rep++ {
		_ = For(context.Background(), 50, 4, func(w, i int) error {
			mu.Lock()
			defer mu.Unlock()
			if i == 3 {
				return errors.New("fail")
			}
			return nil
		})
		Ranges(100, 4, func(lo, hi int) {})
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after, %d before", n, before)
	}
}

// TestRanges checks that the ranges cover [0, n) exactly once.
func TestRanges(t *testing.T) {
	for _, c := range []struct{ n, chunks int }{{0, 2}, {1, 4}, {7, 2}, {7, 7}, {7, 9}, {100, 3}, {100000, 2}} {
		seen := make([]atomic.Int32, c.n)
		var calls atomic.Int32
		Ranges(c.n, c.chunks, func(lo, hi int) {
			calls.Add(1)
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("n=%d chunks=%d: position %d covered %d times", c.n, c.chunks, i, seen[i].Load())
			}
		}
		if int(calls.Load()) > max(1, c.chunks) {
			t.Errorf("n=%d chunks=%d: %d ranges", c.n, c.chunks, calls.Load())
		}
	}
}
