package hvp

import (
	"context"
	"runtime"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// This file: how an Objective spreads its work over goroutines, with
// per-worker evaluation buffers: reductions over batches whose sums are
// formed in a fixed order (reduce), and independent jobs (eachJob).

// worker holds one goroutine's evaluation buffers. When the objective
// runs several workers, their States are serial: the parallelism is across
// batches, not inside kernels.
type worker struct {
	serial bool
	index  int       // in Objective.workers
	pool   StatePool // Objective.States
	states map[*graph.Program]*graph.State
	seeds  map[seedKey]seeds
}

type seedKey struct {
	p      *graph.Program
	output int
}

// seeds are output cotangents (g) and their tangents (dg), set only at the
// output the loss reads.
type seeds struct{ g, dg []*graph.Tensor }

func (w *worker) state(p *graph.Program) *graph.State {
	s, ok := w.states[p]
	if !ok {
		s = w.newState(p)
		s.SetSerial(w.serial)
		w.states[p] = s
	}
	return s
}

// seedBuffers returns the cotangent lists for output o of p.
func (w *worker) seedBuffers(p *graph.Program, o int, shape []int) (g, dg []*graph.Tensor) {
	k := seedKey{p, o}
	s, ok := w.seeds[k]
	if !ok {
		n := p.NumOutputs()
		s = seeds{make([]*graph.Tensor, n), make([]*graph.Tensor, n)}
		s.g[o] = graph.NewFloat(shape, nil)
		s.dg[o] = graph.NewFloat(shape, nil)
		w.seeds[k] = s
	}
	return s.g, s.dg
}

// nworkers is the number of workers for a reduction over the batches.
func (o *Objective) nworkers() int { return max(1, o.nworkersFor(len(o.Batches))) }

// nworkersFor is the number of workers for n independent pieces of work:
// Workers (GOMAXPROCS when 0), at most n.
func (o *Objective) nworkersFor(n int) int {
	w := o.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return min(w, n)
}

func (o *Objective) worker(i int) *worker {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.workers) <= i {
		o.workers = append(o.workers, &worker{serial: o.nworkersFor(len(o.Batches)) > 1, index: len(o.workers), pool: o.States, states: map[*graph.Program]*graph.State{}, seeds: map[seedKey]seeds{}})
	}
	return o.workers[i]
}

// chunks is how many partial sums a reduction over batches uses. It is
// fixed, independent of the number of workers, so that the order of
// floating-point additions, and thus the result, is always the same.
const chunks = 64

// reduce runs f on every batch, spread over the workers, with each chunk
// of consecutive batches accumulating into its own vector of length n;
// then it adds the chunks in order into dst (overwritten) and returns the
// sum of the scalars f returned.
func (o *Objective) reduce(ctx context.Context, dst []float64, f func(w *worker, b *Batch, acc []float64) (float64, error)) (float64, error) {
	nb := len(o.Batches)
	nc := min(chunks, nb)
	acc := make([][]float64, nc)
	vals := make([]float64, nc)
	nw := o.nworkers()
	ws := make([]*worker, nw)
	for wi := range ws {
		ws[wi] = o.worker(wi)
	}
	err := par.For(ctx, nc, nw, func(wi, c int) error {
		acc[c] = make([]float64, len(dst))
		lo, hi := c*nb/nc, (c+1)*nb/nc
		for i := lo; i < hi; i++ {
			v, err := f(ws[wi], &o.Batches[i], acc[c])
			if err != nil {
				return errs.Wrapf(err, "hvp: batch %d: ", i)
			}
			vals[c] += v
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	clear(dst)
	total := 0.0
	for c := 0; c < nc; c++ {
		total += vals[c]
		for j, v := range acc[c] {
			dst[j] += v
		}
	}
	return total, nil
}

// eachJob runs f on jobs 0..n-1, taken in order one at a time by up to
// Workers goroutines, and returns the first error with the job named
// (par.For's rules: no job starts after an error or cancellation).
func (o *Objective) eachJob(ctx context.Context, n int, f func(w *worker, i int) error) error {
	nw := max(1, min(o.nworkersFor(n), n))
	ws := make([]*worker, nw)
	for wi := range ws {
		ws[wi] = o.worker(wi)
	}
	return par.For(ctx, n, nw, func(wi, i int) error {
		if err := f(ws[wi], i); err != nil {
			return errs.Wrapf(err, "hvp: job %d: ", i)
		}
		return nil
	})
}
