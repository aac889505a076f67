package graph

import (
	"runtime"
	"sync"
)

// parallelGrain is the number of elements below which elementwise work is
// not worth handing to another goroutine.
const parallelGrain = 8192

// parallelFor calls f on disjoint ranges [lo, hi) covering [0, n), on up to
// GOMAXPROCS goroutines when n is large. f must write only to positions in
// its own range.
func parallelFor(n int, f func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if w < 2 || n < 2*parallelGrain {
		f(0, n)
		return
	}
	chunks := min(w, n/parallelGrain)
	step := (n + chunks - 1) / chunks
	var wg sync.WaitGroup
	for lo := step; lo < n; lo += step {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			f(lo, min(lo+step, n))
		}(lo)
	}
	f(0, min(step, n))
	wg.Wait()
}
