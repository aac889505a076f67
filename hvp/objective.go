package hvp

import (
	"context"
	"fmt"
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// This file: the objective itself, the weighted loss over batches, with
// its value and gradient. How batches are spread over goroutines is in
// workers.go; curvature products in curvature.go; gradients of parts of
// the loss in gradients.go.

// Batch is one part of the data: a compiled program, its inputs, and for
// one of its outputs the target and weight of every element
// (docs/design.md, section 2.2). An element with weight 0 is not a loss term (a
// padded step, a step past a sequence's end, a deleted block).
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
	// all examples share. PerExampleGradients needs it.
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
	// States, when set, lends the States the batches are evaluated on
	// (StatePool); nil: the Objective allocates its own.
	States StatePool

	mu       sync.Mutex
	workers  []*worker
	examples map[examplesKey]*graph.PerExample
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
		v += o.Ridge / 2 * num.Dot(theta, theta)
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
		v += o.Ridge / 2 * num.Dot(theta, theta)
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
	loss, err = o.terms(&bw, outs[b.Output].Shape, outs[b.Output].F, nil, g[b.Output].F, nil, false)
	return st, outs, g, loss, err
}

// terms evaluates the loss terms of batch b at outputs f (of the given
// shape): their sum, and for each element the weighted first derivative
// into g and, when df is given, the weighted second derivative times df
// into dg (for a grouped loss, the term's Hessian block times df); with gn
// set the second derivative is the loss's Gauss-Newton weight
// (Loss.SecondDerivative), else its exact second derivative.
func (o *Objective) terms(b *Batch, shape []int, f, df, g, dg []float64, gn bool) (float64, error) {
	if len(b.Target) != len(f) || len(b.Weight) != len(f) {
		return 0, fmt.Errorf("targets (%d) and weights (%d) do not match the output's %d elements", len(b.Target), len(b.Weight), len(f))
	}
	if o.Loss.Grouped() {
		return groupedTerms(b, shape, f, df, g, dg)
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
		if gn {
			d2 = o.Loss.gnWeight(b.Target[e], f[e], d2)
		}
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

// groupedTerms is terms for a grouped loss: one term per group of K
// consecutive elements, K the last axis of the output.
func groupedTerms(b *Batch, shape []int, f, df, g, dg []float64) (float64, error) {
	K, err := groupSize(shape, len(f))
	if err != nil {
		return 0, err
	}
	p := make([]float64, K)
	sum := 0.0
	for lo := 0; lo < len(f); lo += K {
		hi := lo + K
		var dfk, dgk []float64
		if df != nil {
			dfk = df[lo:hi]
		}
		if dg != nil {
			dgk = dg[lo:hi]
		}
		if allZero(b.Weight[lo:hi]) {
			clear(g[lo:hi])
			clear(dgk)
			continue
		}
		sum += groupTerms(b.Target[lo:hi], b.Weight[lo:hi], f[lo:hi], dfk, g[lo:hi], dgk, p)
	}
	return sum, nil
}

// groupSize returns K, the last axis of an output of the given shape and
// n elements: the size of one term of a grouped loss.
func groupSize(shape []int, n int) (int, error) {
	if len(shape) == 0 || shape[len(shape)-1] < 2 || n%shape[len(shape)-1] != 0 {
		return 0, fmt.Errorf("softmax cross-entropy needs an output whose last axis holds the K >= 2 logits of the classes; this output has shape %v", shape)
	}
	return shape[len(shape)-1], nil
}

func allZero(w []float64) bool {
	for _, x := range w {
		if x != 0 {
			return false
		}
	}
	return true
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
