package hvp

import (
	"context"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// This file: the dense P×P curvature matrix, formed column by column.

// Dense forms the P×P curvature matrix column by column (C e_j for every
// unit vector, columns spread over the workers), symmetrised as
// (C + C^T)/2 to remove rounding asymmetry. A worker takes a block of
// columns (denseBlocks) and, batch after batch, runs the batch's forward
// and first-order backward passes once and then, per column, only the
// tangent and second-order passes.
func (o *Objective) Dense(ctx context.Context, c Curvature, theta []float64) (*mat.SymDense, error) {
	full, err := o.dense(ctx, c, theta, nil)
	if err != nil {
		return nil, err
	}
	return mat.NewSymDense(len(theta), full), nil
}

// dense forms the curvature as Dense does, returned as a row-major P×P
// slice holding both triangles (mat.NewSymDense reads its upper one).
func (o *Objective) dense(ctx context.Context, c Curvature, theta []float64, progress func(done, total int)) ([]float64, error) {
	P := o.numParams()
	if err := checkLen("theta", theta, P); err != nil {
		return nil, err
	}
	cols := make([]float64, P*P) // column j at cols[j*P:]
	nw := o.nworkersFor(P)
	workers := make([]*denseWorker, max(1, nw))
	var mu sync.Mutex
	done, nb := 0, max(1, len(o.Batches))
	starts := denseBlocks(P, nw)
	err := par.For(ctx, len(starts)-1, nw, func(w, blk int) error {
		if workers[w] == nil {
			workers[w] = &denseWorker{e: make([]float64, P), grad: make([]float64, P), serial: nw > 1, states: map[seedKey]*densePrepared{}}
		}
		lo, hi := starts[blk], starts[blk+1]
		return workers[w].columns(ctx, o, c, theta, lo, hi, cols, func() {
			if progress != nil {
				mu.Lock()
				done += hi - lo
				progress(done/nb, P)
				mu.Unlock()
			}
		})
	})
	if err != nil {
		return nil, err
	}
	// Symmetrise in place: entries (i, j) and (j, i) become their mean.
	for i := 0; i < P; i++ {
		for j := i + 1; j < P; j++ {
			v := (cols[j*P+i] + cols[i*P+j]) / 2
			cols[i*P+j], cols[j*P+i] = v, v
		}
		cols[i*P+i] += o.Ridge
	}
	return cols, nil
}

// denseWorker holds one worker's State per Program (and output read):
// for a block of columns it runs the forward and first-order backward
// passes of one batch, then the block's tangent and second-order passes
// on it, and goes on to the next batch. Holding one batch's evaluation at
// a time keeps the memory and the working set of the passes to one
// batch's buffers; the forward and backward passes are run once per
// block and batch, which denseBlocks keeps few.
type denseWorker struct {
	e      []float64 // the unit vector of the current column
	grad   []float64 // Backward's gradient, not needed
	serial bool
	states map[seedKey]*densePrepared
}

// densePrepared is a State after the forward pass of a batch, with the
// loss's first derivatives g at its outputs f and room for their tangents.
type densePrepared struct {
	st    *graph.State
	g, dg []*graph.Tensor
	f     []float64
	wd2   []float64 // weight times the loss's second derivative, per output
	// scratch receives a grouped loss's first derivatives, not needed.
	scratch []float64
}

// denseBlocks splits the P columns into blocks of consecutive columns
// for nw workers, block b being columns starts[b] to starts[b+1]-1. The
// workers take the blocks in order, and each block runs the forward and
// backward passes of every batch once more, about as much as one more
// column (on the paper's RNN in batches of 100): the blocks shrink as
// they go, each a 2nw-th of the columns left but at least denseBlockMin,
// so that they are few and the last ones short, and the workers finish
// together even when one is slowed by other work.
func denseBlocks(P, nw int) (starts []int) {
	starts = []int{0}
	for lo := 0; lo < P; {
		lo += min(P-lo, max(denseBlockMin, (P-lo)/(2*max(1, nw))))
		starts = append(starts, lo)
	}
	return starts
}

// denseBlockMin is the fewest columns per block of denseBlocks.
const denseBlockMin = 8

// prepare runs the forward (and, for the Hessian, the first-order
// backward) pass of batch i on the worker's State of its Program.
func (dw *denseWorker) prepare(o *Objective, c Curvature, theta []float64, i int) (*densePrepared, error) {
	b := &o.Batches[i]
	k := seedKey{b.Program, b.Output}
	pb, ok := dw.states[k]
	if !ok {
		pb = &densePrepared{st: b.Program.NewState()}
		pb.st.SetSerial(dw.serial)
		dw.states[k] = pb
	}
	outs, err := pb.st.Forward(theta, b.Inputs)
	if err != nil {
		return nil, err
	}
	if pb.g == nil {
		shape := outs[b.Output].Shape
		pb.g = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.dg = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.g[b.Output], pb.dg[b.Output] = graph.NewFloat(shape, nil), graph.NewFloat(shape, nil)
	}
	pb.f = outs[b.Output].F
	if _, err := o.terms(b, pb.g[b.Output].Shape, pb.f, nil, pb.g[b.Output].F, nil, false); err != nil {
		return nil, err
	}
	pb.wd2 = slices.Grow(pb.wd2[:0], len(b.Weight))[:len(b.Weight)]
	for k, w := range b.Weight {
		pb.wd2[k] = 0
		if w != 0 && !o.Loss.Grouped() {
			_, _, d2 := o.Loss.eval(b.Target[k], pb.f[k])
			if c == GaussNewton {
				d2 = o.Loss.gnWeight(b.Target[k], pb.f[k], d2)
			}
			pb.wd2[k] = w * d2
		}
	}
	if c == Hessian {
		if err := pb.st.Backward(pb.g, dw.grad); err != nil {
			return nil, err
		}
	}
	return pb, nil
}

// columns adds columns lo..hi-1 of the curvature (their products with
// the unit vectors) to cols (column j at cols[j*P:]), batch by batch
// (every column sums its batches in order), calling batchDone after
// each batch.
func (dw *denseWorker) columns(ctx context.Context, o *Objective, c Curvature, theta []float64, lo, hi int, cols []float64, batchDone func()) error {
	P := len(dw.e)
	for i := range o.Batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := &o.Batches[i]
		pb, err := dw.prepare(o, c, theta, i)
		if err != nil {
			return errs.Wrapf(err, "hvp: batch %d: ", i)
		}
		for j := lo; j < hi; j++ {
			if err := dw.batchColumn(o, c, b, pb, j, cols[j*P:(j+1)*P]); err != nil {
				return errs.Wrapf(err, "hvp: batch %d: ", i)
			}
		}
		batchDone()
	}
	return nil
}

// batchColumn adds batch b's part of column j of the curvature to col.
func (dw *denseWorker) batchColumn(o *Objective, c Curvature, b *Batch, pb *densePrepared, j int, col []float64) error {
	dw.e[j] = 1
	defer func() { dw.e[j] = 0 }()
	douts, err := pb.st.Tangent(dw.e)
	if err != nil {
		return err
	}
	dg := pb.dg[b.Output].F
	if douts[b.Output] == nil {
		clear(dg)
	} else if o.Loss.Grouped() {
		// The term's K×K Hessian block times df, as terms computes it.
		pb.scratch = slices.Grow(pb.scratch[:0], len(dg))[:len(dg)]
		if _, err := groupedTerms(b, pb.g[b.Output].Shape, pb.f, douts[b.Output].F, pb.scratch, dg); err != nil {
			return err
		}
	} else {
		df := douts[b.Output].F
		for k, w := range b.Weight {
			if w == 0 {
				dg[k] = 0
				continue
			}
			dg[k] = pb.wd2[k] * df[k] // (w d2) df, as terms computes it
		}
	}
	if c == GaussNewton {
		return pb.st.Backward(pb.dg, col)
	}
	return pb.st.SecondOrder(pb.dg, col)
}
