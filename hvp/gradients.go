package hvp

import (
	"context"
	"fmt"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// This file: gradients of parts of the loss. Gradients runs one backward
// pass per job; PerExampleGradients splits one batched pass by example
// (graph.Program.PerExample), into the caller's memory, and
// StreamPerExampleGradients hands them to a callback job by job.

// Job asks for the gradient of part of the loss: batch Batch with weights
// Weight (nil means the batch's own weights).
type Job struct {
	Batch  int
	Weight []float64
	// Outputs asks for the gradient of the weighted sum of the outputs,
	// sum_e Weight_e f_e, instead of the loss (whose losses are then 0):
	// with a weight that keeps one element per example, PerExampleGradients
	// gives one row of every example's output Jacobian.
	Outputs bool
}

// Gradients computes, for every job, the gradient of that job's loss into
// out[i] (allocated when nil) and its loss into losses[i] (when non-nil).
// One backward pass per job, parallel over jobs: with one batch per
// sequence this gives all per-sequence gradients.
func (o *Objective) Gradients(ctx context.Context, theta []float64, jobs []Job, out [][]float64, losses []float64) error {
	p := o.numParams()
	if err := checkLen("theta", theta, p); err != nil {
		return err
	}
	if len(out) != len(jobs) || (losses != nil && len(losses) != len(jobs)) {
		return fmt.Errorf("hvp: %d jobs but %d result slots", len(jobs), len(out))
	}
	return o.eachJob(ctx, len(jobs), func(w *worker, i int) error {
		j := jobs[i]
		if j.Batch < 0 || j.Batch >= len(o.Batches) {
			return fmt.Errorf("names batch %d of %d", j.Batch, len(o.Batches))
		}
		b := &o.Batches[j.Batch]
		wt := j.Weight
		if wt == nil {
			wt = b.Weight
		}
		if out[i] == nil {
			out[i] = make([]float64, p)
		} else {
			clear(out[i])
		}
		loss, err := o.batchGradient(w, b, theta, wt, out[i], j.Outputs)
		if err != nil {
			return errs.Wrapf(err, "batch %d: ", j.Batch)
		}
		if losses != nil {
			losses[i] = loss
		}
		return nil
	})
}

// PerExampleGradients computes, for every job and every example of the job's
// batch (see Batch.ExampleAxes), the gradient of that example's part of
// the job's loss into out[i][e] (allocated when nil) and its loss into
// losses[i][e] (when losses is non-nil): one forward and one backward pass
// per job, the parameter cotangents split by example where the parameters
// meet the data (graph.State.BackwardPerExample). It gives what Gradients
// gives with one batch per example, many times faster. Jobs run in
// parallel; a single job splits its per-example work over the cores
// instead. The error wraps graph.ErrNotSeparable when a program mixes
// examples; one batch per example is then the way.
func (o *Objective) PerExampleGradients(ctx context.Context, theta []float64, jobs []Job, out [][][]float64, losses [][]float64) error {
	p := o.numParams()
	if err := checkLen("theta", theta, p); err != nil {
		return err
	}
	if len(out) != len(jobs) || (losses != nil && len(losses) != len(jobs)) {
		return fmt.Errorf("hvp: %d jobs but %d result slots", len(jobs), len(out))
	}
	xs, err := o.jobExamples(jobs)
	if err != nil {
		return err
	}
	for i, j := range jobs {
		n := xs[i].NumExamples()
		if len(out[i]) != n || (losses != nil && len(losses[i]) != n) {
			return fmt.Errorf("hvp: batch %d has %d examples but job %d has %d result slots", j.Batch, n, i, len(out[i]))
		}
		for e := range out[i] {
			if out[i][e] == nil {
				out[i][e] = make([]float64, p)
			}
		}
	}
	return o.eachJob(ctx, len(jobs), func(w *worker, i int) error {
		var l []float64
		if losses != nil {
			l = losses[i]
		}
		return o.exampleJob(w, theta, xs[i], jobs[i], len(jobs) == 1, out[i], l)
	})
}

// exampleJob runs one job of PerExampleGradients on worker w: the gradient
// of every example of the job's batch (example analysis x) into out, and
// the examples' losses into losses when non-nil. With split set the
// worker's State spreads the per-example work over the cores (a single
// job).
func (o *Objective) exampleJob(w *worker, theta []float64, x *graph.PerExample, j Job, split bool, out [][]float64, losses []float64) error {
	b := &o.Batches[j.Batch]
	wt := j.Weight
	if wt == nil {
		wt = b.Weight
	}
	if split {
		st := w.state(b.Program)
		st.SetSerial(false)
		defer st.SetSerial(w.serial)
	}
	st, outs, g, _, err := o.lossSeeds(w, b, theta, wt, j.Outputs)
	if err != nil {
		return errs.Wrapf(err, "batch %d: ", j.Batch)
	}
	if losses != nil {
		clear(losses)
		if j.Outputs {
			wt = nil // no loss terms
		}
		ids, f := x.Output(b.Output), outs[b.Output].F
		if o.Loss.Grouped() {
			if err := groupLosses(b, outs[b.Output].Shape, wt, f, ids, losses); err != nil {
				return errs.Wrapf(err, "batch %d: ", j.Batch)
			}
		} else {
			for k, we := range wt {
				if we != 0 && ids[k] >= 0 {
					v, _, _ := o.Loss.eval(b.Target[k], f[k])
					losses[ids[k]] += we * v
				}
			}
		}
	}
	if err := st.BackwardPerExample(x, g, out); err != nil {
		return errs.Wrapf(err, "batch %d: ", j.Batch)
	}
	return nil
}

// groupLosses adds, for a grouped loss, every term's loss (the group of
// K logits f with weights wt) to the example of its first element.
func groupLosses(b *Batch, shape []int, wt, f []float64, ids []int32, losses []float64) error {
	K, err := groupSize(shape, len(f))
	if err != nil {
		return err
	}
	p, scratch := make([]float64, K), make([]float64, K)
	for lo := 0; lo < len(f); lo += K {
		hi := lo + K
		if ids[lo] < 0 || allZero(wt[lo:hi]) {
			continue
		}
		losses[ids[lo]] += groupTerms(b.Target[lo:hi], wt[lo:hi], f[lo:hi], nil, scratch, nil, p)
	}
	return nil
}

// jobExamples returns the example analysis of every job's batch,
// checking that the job names a batch.
func (o *Objective) jobExamples(jobs []Job) ([]*graph.PerExample, error) {
	xs := make([]*graph.PerExample, len(jobs))
	for i, j := range jobs {
		if j.Batch < 0 || j.Batch >= len(o.Batches) {
			return nil, fmt.Errorf("hvp: job %d names batch %d of %d", i, j.Batch, len(o.Batches))
		}
		x, err := o.examplesOf(&o.Batches[j.Batch])
		if err != nil {
			return nil, errs.Wrapf(err, "hvp: batch %d: ", j.Batch)
		}
		xs[i] = x
	}
	return xs, nil
}

// examplesOf returns the example analysis of batch b's program, made on
// first use. Its errors are for the caller to put in context.
func (o *Objective) examplesOf(b *Batch) (*graph.PerExample, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := examplesKey{b.Program, fmt.Sprint(b.ExampleAxes)}
	if x, ok := o.examples[key]; ok {
		return x, nil
	}
	if b.ExampleAxes == nil {
		return nil, fmt.Errorf("the batch does not say where its examples are (Batch.ExampleAxes)")
	}
	x, err := b.Program.PerExample(b.ExampleAxes)
	if err != nil {
		return nil, err
	}
	if o.examples == nil {
		o.examples = map[examplesKey]*graph.PerExample{}
	}
	o.examples[key] = x
	return x, nil
}

type examplesKey struct {
	p    *graph.Program
	axes string
}

// PerExampleFunc receives the per-example gradients of one job of
// StreamPerExampleGradients: grads[e] (length P) and losses[e] for every
// example e of the job's batch. worker (0 to Workers-1) says which
// goroutine calls: calls with different workers run concurrently, calls
// with the same worker one after another, so per-worker scratch space
// needs no locking. grads and losses are the worker's buffers, reused
// for its next job: f must not keep them (copy or reduce what it needs).
type PerExampleFunc func(worker, job int, grads [][]float64, losses []float64) error

// StreamPerExampleGradients computes the per-example gradients of every job,
// as PerExampleGradients does, but hands each job's gradients to f as soon
// as they are computed and reuses their buffers for the next job, so that
// they never exist for all jobs at once: peak memory is
//
//	8 bytes × workers × (examples per batch) × P
//
// (plus the graph states of the batches in flight), independent of the
// number of jobs. Jobs are taken in order by up to Workers goroutines,
// each calling f on its own jobs (see PerExampleFunc); the order in which
// different workers' calls happen is not fixed, so f should write its
// results by job index. It stops at the first error (of a job or of f),
// or when the context ends, and returns it with the job named. It is the
// map step of a pass over the training data whose reduction is whatever
// f keeps (see package audit's scale functions).
func (o *Objective) StreamPerExampleGradients(ctx context.Context, theta []float64, jobs []Job, f PerExampleFunc) error {
	p := o.numParams()
	if err := checkLen("theta", theta, p); err != nil {
		return err
	}
	xs, err := o.jobExamples(jobs)
	if err != nil {
		return err
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
			return errs.Wrapf(err, "hvp: job %d: ", i)
		}
		if err := f(wi, i, grads, losses); err != nil {
			return errs.Wrapf(err, "hvp: job %d: ", i)
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
