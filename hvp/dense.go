package hvp

import (
	"context"
	"fmt"
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/par"
	"gonum.org/v1/gonum/mat"
)

// This file: the dense P×P curvature matrix, formed column by column.

// Dense forms the P×P curvature matrix column by column (C e_j for every
// unit vector, columns spread over the workers), symmetrised as
// (C + C^T)/2 to remove rounding asymmetry. Each worker runs the forward
// and first-order backward passes of every batch once and then, per
// column, only the tangent and second-order passes.
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
	done := 0
	nblk := (P + denseBlock - 1) / denseBlock
	err := par.For(ctx, nblk, nw, func(w, blk int) error {
		if workers[w] == nil {
			dw, err := o.prepareDense(c, theta, nw > 1)
			if err != nil {
				return err
			}
			workers[w] = dw
		}
		lo, hi := blk*denseBlock, min(P, (blk+1)*denseBlock)
		if err := workers[w].columns(o, c, lo, hi, cols); err != nil {
			return err
		}
		if progress != nil {
			mu.Lock()
			done += hi - lo
			progress(done, P)
			mu.Unlock()
		}
		return nil
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

// denseWorker holds one worker's evaluation of every batch for Dense: the
// forward and first-order backward passes, run once, after which each
// column needs only the tangent and second-order passes.
type denseWorker struct {
	bs []densePrepared
	e  []float64 // the unit vector of the current column
}

// densePrepared is one batch's State after the forward pass, with the
// loss's first derivatives g at its outputs f and room for their tangents.
type densePrepared struct {
	st    *graph.State
	g, dg []*graph.Tensor
	f     []float64
	wd2   []float64 // weight times the loss's second derivative, per output
}

// prepareDense runs the forward (and, for the Hessian, the first-order
// backward) pass of every batch on fresh States. The States of one
// Program share their tangent and second-order buffers (and, for the
// Gauss-Newton matrix, whose cotangents are scratch too, their cotangent
// buffers): a column runs its passes on one batch at a time, so one set
// serves them all, held once per worker instead of once per batch.
func (o *Objective) prepareDense(c Curvature, theta []float64, serial bool) (*denseWorker, error) {
	P := len(theta)
	dw := &denseWorker{bs: make([]densePrepared, len(o.Batches)), e: make([]float64, P)}
	scratch := make([]float64, P)
	first := map[*graph.Program]*graph.State{}
	for i := range o.Batches {
		b := &o.Batches[i]
		pb := &dw.bs[i]
		pb.st = b.Program.NewState()
		pb.st.SetSerial(serial)
		if f, ok := first[b.Program]; ok {
			if err := pb.st.ShareBuffers(f, c != Hessian); err != nil {
				return nil, fmt.Errorf("hvp: batch %d: %w", i, err)
			}
		} else {
			first[b.Program] = pb.st
		}
		outs, err := pb.st.Forward(theta, b.Inputs)
		if err != nil {
			return nil, fmt.Errorf("hvp: batch %d: %w", i, err)
		}
		shape := outs[b.Output].Shape
		pb.g = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.dg = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.g[b.Output], pb.dg[b.Output] = graph.NewFloat(shape, nil), graph.NewFloat(shape, nil)
		pb.f = outs[b.Output].F
		if _, err := o.terms(b, pb.f, nil, pb.g[b.Output].F, nil); err != nil {
			return nil, err
		}
		pb.wd2 = make([]float64, len(b.Weight))
		for k, w := range b.Weight {
			if w != 0 {
				_, _, d2 := o.Loss.eval(b.Target[k], pb.f[k])
				pb.wd2[k] = w * d2
			}
		}
		if c == Hessian {
			if err := pb.st.Backward(pb.g, scratch); err != nil {
				return nil, err
			}
		}
	}
	return dw, nil
}

// denseBlock is how many columns a worker forms per sweep over the
// batches: each batch's State then serves denseBlock columns in a row
// while its buffers are still in cache.
const denseBlock = 16

// columns adds columns lo..hi-1 of the curvature (their products with
// the unit vectors) to cols (column j at cols[j*P:]), batch by batch:
// every column still sums its batches in order.
func (dw *denseWorker) columns(o *Objective, c Curvature, lo, hi int, cols []float64) error {
	P := len(dw.e)
	for i := range o.Batches {
		b, pb := &o.Batches[i], &dw.bs[i]
		for j := lo; j < hi; j++ {
			if err := dw.batchColumn(o, c, b, pb, j, cols[j*P:(j+1)*P]); err != nil {
				return fmt.Errorf("hvp: batch %d: %w", i, err)
			}
		}
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
