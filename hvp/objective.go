package hvp

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// Batch is one part of the data: a compiled program, its inputs, and for
// one of its outputs the target and weight of every element (DESIGN
// section 2). An element with weight 0 is not a loss term (a padded step,
// a step past a sequence's end, a deleted block).
type Batch struct {
	Program *graph.Program
	Inputs  []*graph.Tensor
	// Output is the index of the program output the loss reads.
	Output int
	// Target and Weight have one entry per element of that output, in its
	// row-major order.
	Target []float64
	Weight []float64
	// ExampleAxes, when set, has one entry per program input: the axis
	// that indexes the batch's examples (sequences), or -1 for an input
	// all examples share. ExampleGradients needs it.
	ExampleAxes []int
}

// Objective is the weighted loss
//
//	L(theta; w) = sum over batches, sum over elements e of w_e l(y_e, f_e(theta)),
//
// with its gradient, exact Hessian-vector products and Gauss-Newton-vector
// products. Batches are evaluated in parallel on up to Workers goroutines
// (GOMAXPROCS when 0); sums are formed in a fixed order, so results do not
// depend on the number of workers. An Objective caches per-worker buffers:
// its methods must not be called concurrently.
type Objective struct {
	Loss    Loss
	Batches []Batch
	Workers int
	// Ridge is the coefficient r of an L2 penalty (r/2)|theta|^2 that the
	// model was trained with (weight decay, in the units of the summed
	// loss). It is part of Value, Gradient and the curvature (r I), but of
	// no job's gradient: no block of data owns it.
	Ridge float64

	mu       sync.Mutex
	workers  []*worker
	examples map[examplesKey]*graph.PerExample
}

type examplesKey struct {
	p    *graph.Program
	axes string
}

// worker holds one goroutine's evaluation buffers. When the objective
// runs several workers, their States are serial: the parallelism is across
// batches, not inside kernels.
type worker struct {
	serial bool
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
		s = p.NewState()
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

func (o *Objective) worker(i int) *worker {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.workers) <= i {
		o.workers = append(o.workers, &worker{serial: o.nworkersFor(len(o.Batches)) > 1, states: map[*graph.Program]*graph.State{}, seeds: map[seedKey]seeds{}})
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
				return fmt.Errorf("hvp: batch %d: %w", i, err)
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

// terms evaluates the loss terms of batch b at outputs f: their sum, and
// for each element the weighted first derivative into g and, when df is
// given, the weighted second derivative times df into dg.
func (o *Objective) terms(b *Batch, f, df, g, dg []float64) (float64, error) {
	if len(b.Target) != len(f) || len(b.Weight) != len(f) {
		return 0, fmt.Errorf("targets (%d) and weights (%d) do not match the output's %d elements", len(b.Target), len(b.Weight), len(f))
	}
	sum := 0.0
	for e, w := range b.Weight {
		if w == 0 {
			g[e] = 0
			if dg != nil {
				dg[e] = 0
			}
			continue
		}
		v, d1, d2 := o.Loss.eval(b.Target[e], f[e])
		sum += w * v
		g[e] = w * d1
		if dg != nil {
			if df != nil {
				dg[e] = w * d2 * df[e]
			} else {
				dg[e] = 0
			}
		}
	}
	return sum, nil
}

func checkLen(name string, v []float64, p int) error {
	if len(v) != p {
		return fmt.Errorf("hvp: %s has length %d, the model has %d parameters", name, len(v), p)
	}
	return nil
}

func (o *Objective) numParams() int {
	if len(o.Batches) == 0 {
		return 0
	}
	return o.Batches[0].Program.Graph().NumParams()
}

// Value returns L(theta; w) (plus the ridge penalty).
func (o *Objective) Value(ctx context.Context, theta []float64) (float64, error) {
	if err := checkLen("theta", theta, o.numParams()); err != nil {
		return 0, err
	}
	v, err := o.reduce(ctx, nil, func(w *worker, b *Batch, _ []float64) (float64, error) {
		_, _, _, loss, err := o.lossSeeds(w, b, theta, b.Weight, false)
		return loss, err
	})
	if o.Ridge != 0 {
		v += o.Ridge / 2 * dot(theta, theta)
	}
	return v, err
}

// Gradient writes dL/dtheta into grad and returns L(theta; w) (both with
// the ridge penalty).
func (o *Objective) Gradient(ctx context.Context, theta, grad []float64) (float64, error) {
	p := o.numParams()
	if err := checkLen("theta", theta, p); err != nil {
		return 0, err
	}
	if err := checkLen("grad", grad, p); err != nil {
		return 0, err
	}
	v, err := o.reduce(ctx, grad, func(w *worker, b *Batch, acc []float64) (float64, error) {
		return o.batchGradient(w, b, theta, b.Weight, acc, false)
	})
	if o.Ridge != 0 && err == nil {
		for i, t := range theta {
			grad[i] += o.Ridge * t
		}
		v += o.Ridge / 2 * dot(theta, theta)
	}
	return v, err
}

// batchGradient adds batch b's gradient, with weights wt, into acc and
// returns its loss.
func (o *Objective) batchGradient(w *worker, b *Batch, theta, wt, acc []float64, outputs bool) (float64, error) {
	st, _, g, loss, err := o.lossSeeds(w, b, theta, wt, outputs)
	if err != nil {
		return 0, err
	}
	return loss, st.Backward(g, acc)
}

// lossSeeds runs batch b forward at theta on worker w's State and sets the
// output cotangents of its loss with weights wt, ready for a backward
// pass. It returns the State, the outputs, the cotangents and the loss.
// With outputs set the cotangents are the weights themselves (the
// gradient of sum_e wt_e f_e, see Job.Outputs) and the loss is 0.
func (o *Objective) lossSeeds(w *worker, b *Batch, theta, wt []float64, outputs bool) (st *graph.State, outs, g []*graph.Tensor, loss float64, err error) {
	st = w.state(b.Program)
	if outs, err = st.Forward(theta, b.Inputs); err != nil {
		return nil, nil, nil, 0, err
	}
	g, _ = w.seedBuffers(b.Program, b.Output, outs[b.Output].Shape)
	if outputs {
		if len(wt) != len(outs[b.Output].F) {
			return nil, nil, nil, 0, fmt.Errorf("weights (%d) do not match the output's %d elements", len(wt), len(outs[b.Output].F))
		}
		copy(g[b.Output].F, wt)
		return st, outs, g, 0, nil
	}
	bw := *b
	bw.Weight = wt
	loss, err = o.terms(&bw, outs[b.Output].F, nil, g[b.Output].F, nil)
	return st, outs, g, loss, err
}

// HVP writes the exact Hessian-vector product H v into hv, where H is the
// Hessian of L(.; w) at theta (forward-over-reverse differentiation, no
// finite differences).
func (o *Objective) HVP(ctx context.Context, theta, v, hv []float64) error {
	return o.curvature(ctx, theta, v, hv, false)
}

// GNVP writes the Gauss-Newton-vector product G v = J^T D J v into gv,
// where J is the Jacobian of the outputs and D the diagonal of second
// derivatives of the weighted loss in the outputs (positive
// semi-definite for both losses).
func (o *Objective) GNVP(ctx context.Context, theta, v, gv []float64) error {
	return o.curvature(ctx, theta, v, gv, true)
}

func (o *Objective) curvature(ctx context.Context, theta, v, out []float64, gaussNewton bool) error {
	p := o.numParams()
	for _, c := range []struct {
		name string
		v    []float64
	}{{"theta", theta}, {"v", v}, {"result", out}} {
		if err := checkLen(c.name, c.v, p); err != nil {
			return err
		}
	}
	defer func() {
		if o.Ridge != 0 {
			for i, x := range v {
				out[i] += o.Ridge * x
			}
		}
	}()
	_, err := o.reduce(ctx, out, func(w *worker, b *Batch, acc []float64) (float64, error) {
		st := w.state(b.Program)
		outs, douts, err := st.ForwardTangent(theta, v, b.Inputs)
		if err != nil {
			return 0, err
		}
		var df []float64
		if douts[b.Output] != nil {
			df = douts[b.Output].F
		}
		g, dg := w.seedBuffers(b.Program, b.Output, outs[b.Output].Shape)
		if _, err := o.terms(b, outs[b.Output].F, df, g[b.Output].F, dg[b.Output].F); err != nil {
			return 0, err
		}
		if gaussNewton {
			return 0, st.Backward(dg, acc)
		}
		scratch := make([]float64, p)
		return 0, st.BackwardTangent(g, dg, scratch, acc)
	})
	return err
}

// Job asks for the gradient of part of the loss: batch Batch with weights
// Weight (nil means the batch's own weights).
type Job struct {
	Batch  int
	Weight []float64
	// Outputs asks for the gradient of the weighted sum of the outputs,
	// sum_e Weight_e f_e, instead of the loss (whose losses are then 0):
	// with a weight that keeps one element per example, ExampleGradients
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
			return fmt.Errorf("batch %d: %w", j.Batch, err)
		}
		if losses != nil {
			losses[i] = loss
		}
		return nil
	})
}

// nworkersFor is the number of workers for n independent pieces of work:
// Workers (GOMAXPROCS when 0), at most n.
func (o *Objective) nworkersFor(n int) int {
	w := o.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return min(w, n)
}

// ExampleGradients computes, for every job and every example of the job's
// batch (see Batch.ExampleAxes), the gradient of that example's part of
// the job's loss into out[i][e] (allocated when nil) and its loss into
// losses[i][e] (when losses is non-nil): one forward and one backward pass
// per job, the parameter cotangents split by example where the parameters
// meet the data (graph.State.BackwardPerExample). It gives what Gradients
// gives with one batch per example, many times faster. Jobs run in
// parallel; a single job splits its per-example work over the cores
// instead. The error wraps graph.ErrNotSeparable when a program mixes
// examples; one batch per example is then the way.
func (o *Objective) ExampleGradients(ctx context.Context, theta []float64, jobs []Job, out [][][]float64, losses [][]float64) error {
	p := o.numParams()
	if err := checkLen("theta", theta, p); err != nil {
		return err
	}
	if len(out) != len(jobs) || (losses != nil && len(losses) != len(jobs)) {
		return fmt.Errorf("hvp: %d jobs but %d result slots", len(jobs), len(out))
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
		n := x.NumExamples()
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

// exampleJob runs one job of ExampleGradients on worker w: the gradient
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
		return fmt.Errorf("batch %d: %w", j.Batch, err)
	}
	if losses != nil {
		clear(losses)
		if j.Outputs {
			wt = nil // no loss terms
		}
		ids, f := x.Output(b.Output), outs[b.Output].F
		for k, we := range wt {
			if we != 0 && ids[k] >= 0 {
				v, _, _ := o.Loss.eval(b.Target[k], f[k])
				losses[ids[k]] += we * v
			}
		}
	}
	if err := st.BackwardPerExample(x, g, out); err != nil {
		return fmt.Errorf("batch %d: %w", j.Batch, err)
	}
	return nil
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
			return fmt.Errorf("hvp: job %d: %w", i, err)
		}
		return nil
	})
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
