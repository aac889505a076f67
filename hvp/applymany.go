package hvp

import (
	"context"
	"fmt"

	"github.com/rnnaudit/rnnaudit/graph"
)

// This file: curvature products of several vectors at once, sharing each
// batch's forward pass, and products at a fixed point that keep every
// batch's forward pass (atPoint).

// applyManyMax bounds the vectors of one pass of ApplyMany: each chunk
// of batches of the reduction holds one partial sum of length P per
// vector.
const applyManyMax = 16

// ApplyMany writes C v[j] into out[j] for every j, as Apply does for
// one vector, but runs each batch's forward pass once for up to
// applyManyMax vectors (then, per vector, the tangent and backward
// passes): on the 64-unit LSTM, eight products over 1000 sequences take
// half the time of eight Applys (BenchmarkScaleApplyMany: 4.0 s against
// 7.9 s on a loaded machine, load average 27). Every out[j] is the same,
// bit for bit, as Apply's: the same passes, summed in the same order.
func (o *Objective) ApplyMany(ctx context.Context, c Curvature, theta []float64, v, out [][]float64) error {
	if err := o.checkMany(theta, v, out); err != nil {
		return err
	}
	return o.applyChunks(ctx, v, out, func(w *worker, b *Batch) (*graph.State, batchSeeds, error) {
		st := w.state(b.Program)
		outs, err := st.Forward(theta, b.Inputs)
		if err != nil {
			return nil, batchSeeds{}, err
		}
		g, dg := w.seedBuffers(b.Program, b.Output, outs[b.Output].Shape)
		s := batchSeeds{f: outs[b.Output].F, g: g, dg: dg}
		return st, s, o.firstOrder(st, b, c, s)
	}, c)
}

// batchSeeds are a batch's loss outputs f after its forward pass and the
// cotangent lists g, dg that its backward passes are seeded with.
type batchSeeds struct {
	f     []float64
	g, dg []*graph.Tensor
}

// firstOrder runs, for the Hessian, the backward pass of the first
// derivatives of the loss, which every vector's second-order pass reuses
// (nothing for the Gauss-Newton matrix).
func (o *Objective) firstOrder(st *graph.State, b *Batch, c Curvature, s batchSeeds) error {
	if c != Hessian {
		return nil
	}
	if _, err := o.terms(b, s.g[b.Output].Shape, s.f, nil, s.g[b.Output].F, nil, false); err != nil {
		return err
	}
	return st.Backward(s.g, make([]float64, o.numParams()))
}

// checkMany checks the lengths of ApplyMany's arguments.
func (o *Objective) checkMany(theta []float64, v, out [][]float64) error {
	P := o.numParams()
	if len(v) != len(out) {
		return fmt.Errorf("hvp: %d vectors and %d results", len(v), len(out))
	}
	if err := checkLen("theta", theta, P); err != nil {
		return err
	}
	for j := range v {
		if err := checkLen(fmt.Sprintf("vector %d", j), v[j], P); err != nil {
			return err
		}
		if err := checkLen(fmt.Sprintf("result %d", j), out[j], P); err != nil {
			return err
		}
	}
	return nil
}

// applyChunks computes the products of v, applyManyMax vectors per pass
// over the batches, each batch's State after its forward pass (and the
// first-order backward pass for the Hessian) from prepare.
func (o *Objective) applyChunks(ctx context.Context, v, out [][]float64, prepare func(w *worker, b *Batch) (*graph.State, batchSeeds, error), c Curvature) error {
	P := o.numParams()
	for lo := 0; lo < len(v); lo += applyManyMax {
		hi := min(len(v), lo+applyManyMax)
		vs, outs := v[lo:hi], out[lo:hi]
		all := make([]float64, len(vs)*P)
		_, err := o.reduce(ctx, all, func(w *worker, b *Batch, acc []float64) (float64, error) {
			st, s, err := prepare(w, b)
			if err != nil {
				return 0, err
			}
			for j := range vs {
				douts, err := st.Tangent(vs[j])
				if err != nil {
					return 0, err
				}
				var df []float64
				if douts[b.Output] != nil {
					df = douts[b.Output].F
				}
				if _, err := o.terms(b, s.g[b.Output].Shape, s.f, df, s.g[b.Output].F, s.dg[b.Output].F, c == GaussNewton); err != nil {
					return 0, err
				}
				a := acc[j*P : (j+1)*P]
				if c == GaussNewton {
					err = st.Backward(s.dg, a)
				} else {
					err = st.SecondOrder(s.dg, a)
				}
				if err != nil {
					return 0, err
				}
			}
			return 0, nil
		})
		if err != nil {
			return err
		}
		for j := range vs {
			copy(outs[j], all[j*P:(j+1)*P])
			if o.Ridge != 0 {
				for i, x := range vs[j] {
					outs[j][i] += o.Ridge * x
				}
			}
		}
	}
	return nil
}

// pointMaxBytes bounds the States that atPoint keeps (StateBytes of each
// batch's program, three times over for the tangent and cotangent
// buffers).
const pointMaxBytes = 768 << 20

// atPoint returns the curvature products of o at theta for many vectors,
// like ApplyMany, but with every batch's forward pass run once, on the
// first call, and kept: the Lanczos process and the PCG solves of the
// low-rank factor take hundreds of products at one theta, each then only
// a tangent and a backward pass per batch. When the batches' States
// would take more than pointMaxBytes it returns ApplyMany at theta. The
// products are ApplyMany's, bit for bit. c, theta and o's batches must
// not change while the function is in use.
func (o *Objective) atPoint(c Curvature, theta []float64) func(ctx context.Context, v, out [][]float64) error {
	bytes := 0
	for i := range o.Batches {
		bytes += 3 * o.Batches[i].Program.StateBytes()
	}
	if bytes > pointMaxBytes {
		return func(ctx context.Context, v, out [][]float64) error { return o.ApplyMany(ctx, c, theta, v, out) }
	}
	var states []*graph.State
	var seeds []batchSeeds
	index := make(map[*Batch]int, len(o.Batches))
	for i := range o.Batches {
		index[&o.Batches[i]] = i
	}
	return func(ctx context.Context, v, out [][]float64) error {
		if err := o.checkMany(theta, v, out); err != nil {
			return err
		}
		if states == nil {
			st := make([]*graph.State, len(o.Batches))
			ss := make([]batchSeeds, len(o.Batches))
			serial := o.nworkersFor(len(o.Batches)) > 1
			err := o.eachJob(ctx, len(o.Batches), func(_ *worker, i int) error {
				b := &o.Batches[i]
				st[i] = b.Program.NewState()
				st[i].SetSerial(serial)
				outs, err := st[i].Forward(theta, b.Inputs)
				if err != nil {
					return err
				}
				n := b.Program.NumOutputs()
				s := batchSeeds{f: outs[b.Output].F, g: make([]*graph.Tensor, n), dg: make([]*graph.Tensor, n)}
				s.g[b.Output] = graph.NewFloat(outs[b.Output].Shape, nil)
				s.dg[b.Output] = graph.NewFloat(outs[b.Output].Shape, nil)
				ss[i] = s
				return o.firstOrder(st[i], b, c, s)
			})
			if err != nil {
				return err
			}
			states, seeds = st, ss
		}
		return o.applyChunks(ctx, v, out, func(_ *worker, b *Batch) (*graph.State, batchSeeds, error) {
			i := index[b]
			return states[i], seeds[i], nil
		}, c)
	}
}
