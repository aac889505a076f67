package graph

import (
	"runtime"

	"github.com/rnnaudit/rnnaudit/internal/par"
)

// parallelGrain is the number of elements below which elementwise work is
// not worth handing to another goroutine.
const parallelGrain = 8192

// exec is how a State runs its kernels. A nil *exec, or one with serial
// set, keeps all work on the calling goroutine.
type exec struct {
	serial   bool
	sparsity sparsityCache // tangents' nonzero entries (sparsecache.go)
	// transposes of forward values (transposecache.go)
	transposes transposeCache
	fresh      uint64 // the current step's inputs to set, not add to (freshcot.go)
}

// parallelFor calls f on disjoint ranges [lo, hi) covering [0, n), on up to
// GOMAXPROCS goroutines when n is large and the State is not serial. f must
// write only to positions in its own range.
func (ex *exec) parallelFor(n int, f func(lo, hi int)) { ex.parallelForGrain(n, parallelGrain, f) }

// parallelForGrain is parallelFor for work items worth grain elements'
// work each: each goroutine gets at least grain of them.
func (ex *exec) parallelForGrain(n, grain int, f func(lo, hi int)) {
	if ex == nil || ex.serial || n < 2*grain {
		f(0, n)
		return
	}
	// Asked only for large work: runtime.GOMAXPROCS takes the scheduler's
	// lock, which many small kernels on several goroutines contend for.
	w := runtime.GOMAXPROCS(0)
	if w < 2 {
		f(0, n)
		return
	}
	par.Ranges(n, min(w, n/grain), f)
}
