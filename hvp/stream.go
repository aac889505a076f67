package hvp

import (
	"context"
	"fmt"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// ExampleFunc receives the per-example gradients of one job of
// StreamExampleGradients: grads[e] (length P) and losses[e] for every
// example e of the job's batch. worker (0 to Workers-1) says which
// goroutine calls: calls with different workers run concurrently, calls
// with the same worker one after another, so per-worker scratch space
// needs no locking. grads and losses are the worker's buffers, reused
// for its next job: f must not keep them (copy or reduce what it needs).
type ExampleFunc func(worker, job int, grads [][]float64, losses []float64) error

// StreamExampleGradients computes the per-example gradients of every job,
// as ExampleGradients does, but hands each job's gradients to f as soon
// as they are computed and reuses their buffers for the next job, so that
// they never exist for all jobs at once: peak memory is
//
//	8 bytes × workers × (examples per batch) × P
//
// (plus the graph states of the batches in flight), independent of the
// number of jobs. Jobs are taken in order by up to Workers goroutines,
// each calling f on its own jobs (see ExampleFunc); the order in which
// different workers' calls happen is not fixed, so f should write its
// results by job index. It stops at the first error (of a job or of f),
// or when the context ends, and returns it with the job named. It is the
// map step of a pass over the training data whose reduction is whatever
// f keeps (see package audit's scale functions).
func (o *Objective) StreamExampleGradients(ctx context.Context, theta []float64, jobs []Job, f ExampleFunc) error {
	p := o.numParams()
	if err := checkLen("theta", theta, p); err != nil {
		return err
	}
	xs := make([]*graph.PerExample, len(jobs))
	for i, j := range jobs {
		if j.Batch < 0 || j.Batch >= len(o.Batches) {
			return fmt.Errorf("hvp: job %d names batch %d of %d", i, j.Batch, len(o.Batches))
		}
		x, err := o.examplesOf(&o.Batches[j.Batch])
		if err != nil {
			return fmt.Errorf("hvp: batch %d: %w", j.Batch, err)
		}
		xs[i] = x
	}
	nw := max(1, o.nworkersFor(len(jobs)))
	ws := make([]*worker, nw)
	bufs := make([]streamBuf, nw)
	for wi := range ws {
		ws[wi] = o.worker(wi)
	}
	return par.For(ctx, len(jobs), nw, func(wi, i int) error {
		grads, losses := bufs[wi].get(xs[i].NumExamples(), p)
		if err := o.exampleJob(ws[wi], theta, xs[i], jobs[i], nw == 1, grads, losses); err != nil {
			return fmt.Errorf("hvp: job %d: %w", i, err)
		}
		if err := f(wi, i, grads, losses); err != nil {
			return fmt.Errorf("hvp: job %d: %w", i, err)
		}
		return nil
	})
}

// streamBuf is one worker's gradient and loss buffers, grown to the
// largest batch it has seen.
type streamBuf struct {
	grads  [][]float64
	losses []float64
}

func (b *streamBuf) get(n, p int) ([][]float64, []float64) {
	for len(b.grads) < n {
		b.grads = append(b.grads, make([]float64, p))
	}
	if len(b.losses) < n {
		b.losses = make([]float64, n)
	}
	return b.grads[:n], b.losses[:n]
}
