package audit

// The worker's half of the LowRank path's stages (package table: the
// stages, the executor and the chunks' encodings): a worker builds the
// audit's problem once (NewWorker: the model, the data and the options,
// read from the same files as the driver's) and runs chunks with a
// chunkRunner; the driver's half is table.Execute. The curvature, the probes,
// the refinement of Newton steps and the summary stay on the driver.
// This file imports nothing of any engine.

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// Worker runs chunks of an audit's stages: it holds the audit's problem
// (model, data sets, batches, block scheme), built once per worker.
type Worker struct {
	p      *problem
	digest [32]byte
}

// NewWorker prepares the problem of an audit of model on train and test
// (nil: a self-audit) with opt, as Run does before its influence phase:
// a worker must be given the driver's inputs.
func NewWorker(model *graph.Graph, train, test *blocks.Dataset, opt *Options) (w *Worker, err error) {
	defer catchInternal(&err)
	o, g, err := validate(model, train, test, opt)
	if err != nil {
		return nil, err
	}
	p, err := prepare(o, g, train, test)
	if err != nil {
		return nil, err
	}
	return &Worker{p: p, digest: p.digest()}, nil
}

// digest is a SHA-256 of what the chunks of a problem depend on: the
// options that shape the model's inputs, outputs and loss, the trained
// parameters, and the training, evaluated and calibration sequences.
func (p *problem) digest() [32]byte {
	h := sha256.New()
	o := &p.opt
	inputs := slices.Sorted(maps.Keys(o.Inputs))
	fmt.Fprintf(h, "%d %v %q %d %d %g %q %d %d|%s", o.Layout, inputs, o.Output, o.Horizons, o.Loss, o.Ridge, o.Params, o.Blocks, o.BlockLength, o.Align)
	for _, k := range inputs {
		fmt.Fprintf(h, "%q=%q|", k, o.Inputs[k])
	}
	b := make([]byte, 0, 64)
	fs := func(v []float64) {
		b = binary.LittleEndian.AppendUint64(b[:0], uint64(len(v)))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		h.Write(b)
	}
	fs(p.theta)
	for _, d := range []*blocks.Dataset{p.train, p.eval, p.cal} {
		if d == nil {
			h.Write([]byte("none"))
			continue
		}
		fmt.Fprintf(h, "%d %q %q %d|", d.Len(), d.Features, d.Targets, d.Shift)
		for _, s := range d.Seqs {
			fmt.Fprintf(h, "%q %d|", s.ID, len(s.X))
			for t := range s.X {
				fs(s.X[t])
				if t < len(s.Y) {
					fs(s.Y[t])
				}
			}
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// newFactorSpec is the driver's table.FactorSpec for problem p.
func newFactorSpec(p *problem, U []float64, red hvp.Reduced, slots map[forecast]int, withRows, newton bool) *table.FactorSpec {
	f := &table.FactorSpec{P: len(p.theta), U: U, Reduced: red, Loss: p.opt.Loss, Slots: make([][2]int, len(slots)), WithRows: withRows, Newton: newton}
	if p.opt.Executor != nil {
		f.Problem = p.digest() // only a worker checks it
	}
	for fc, s := range slots {
		f.Slots[s] = [2]int{fc.T, fc.H}
	}
	return f
}

// blockSpecOf checks f and builds the block pass's spec of it: the
// slot map and the factor's projector, once per stage.
func blockSpecOf(f *table.FactorSpec) (*blockSpec, error) {
	if f.P <= 0 || len(f.U)%f.P != 0 || len(f.U)/f.P != len(f.Reduced.D) {
		return nil, fmt.Errorf("audit: a factor of %d floats for %d parameters and %d coordinates", len(f.U), f.P, len(f.Reduced.D))
	}
	slots := make(map[forecast]int, len(f.Slots))
	for s, fc := range f.Slots {
		slots[forecast{T: fc[0], H: fc[1]}] = s
	}
	return &blockSpec{red: f.Reduced, U: f.U, P: f.P, proj: table.NewProjector(f.U, f.P), loss: f.Loss, slots: slots, withRows: f.WithRows, newton: f.Newton}, nil
}

// blockChunk runs the block pass on chunk c with the factor's spec s:
// the gradients (and, s.withRows, the output-Jacobian rows) of its
// sequences on this worker, then mapBlockChunk, which the in-process path
// calls on the same values.
func (w *Worker) blockChunk(ctx context.Context, s *blockSpec, c *table.BlockChunk) (out *table.BlockChunkOut, err error) {
	defer catchInternal(&err)
	p := w.p
	if err := c.Check(p.train.Len()); err != nil {
		return nil, err
	}
	terms := make([][]ownTerm, len(c.Terms))
	for b, ts := range c.Terms {
		terms[b] = termsFromWire(ts)
	}
	gr, err := p.chunkGroup(p.train, c.Seqs)
	if err != nil {
		return nil, err
	}
	st := newGroupStream(p, []*group{gr})
	err = st.run(ctx, true, s.withRows, func(_ int, _ *group, grads, rows [][][]float64) error {
		out, err = s.mapChunk(c, terms, grads, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// wireTerms are a sequence's loss terms as a block chunk carries them.
func wireTerms(ts []ownTerm) []table.Term {
	out := make([]table.Term, len(ts))
	for a, t := range ts {
		out[a] = table.Term{T: t.f.T, H: t.f.H, Y: t.y, FX: t.fx, W: t.w, Forecast: t.forcast}
	}
	return out
}

// termsFromWire are the loss terms a block chunk carries (wireTerms),
// without their sequence, which the block pass does not read.
func termsFromWire(ts []table.Term) []ownTerm {
	out := make([]ownTerm, len(ts))
	for a, t := range ts {
		out[a] = ownTerm{f: forecast{T: t.T, H: t.H}, y: t.Y, fx: t.FX, w: t.W, forcast: t.Forecast}
	}
	return out
}

// mapChunk is the block pass's map step on a chunk whose gradients and
// Jacobian rows are computed (batchFunc's grads and rows), terms its
// sequences' loss terms.
func (s *blockSpec) mapChunk(c *table.BlockChunk, terms [][]ownTerm, grads, rows [][][]float64) (*table.BlockChunkOut, error) {
	in := blockChunk{grads: make([][]float64, len(c.Seqs)), rows: rows, terms: terms, blocks: c.Blocks, labels: c.Labels}
	for b := range c.Seqs {
		in.grads[b] = grads[b][0]
	}
	return s.mapBlockChunk(in)
}

// pointChunk runs the test pass on chunk c with the factor f: the
// output-Jacobian rows of its sequences on this worker, then table.MapPoints.
func (w *Worker) pointChunk(ctx context.Context, f *table.FactorSpec, c *table.PointChunk) (out []table.PointRecord, err error) {
	defer catchInternal(&err)
	p := w.p
	d := p.eval
	if c.Cal {
		d = p.cal
		if d == nil {
			return nil, fmt.Errorf("audit: a point chunk of calibration sequences, the worker has no calibration set")
		}
	}
	for _, i := range c.Seqs {
		if i < 0 || i >= d.Len() {
			return nil, fmt.Errorf("audit: a point chunk names sequence %d of %d", i, d.Len())
		}
	}
	gr, err := p.chunkGroup(d, c.Seqs)
	if err != nil {
		return nil, err
	}
	s := newGroupStream(p, []*group{gr})
	nf := len(p.io.Forecasts(gr.T))
	for _, pt := range c.Points {
		if pt.Seq < 0 || pt.Seq >= len(c.Seqs) || pt.Forecast < 0 || pt.Forecast >= nf {
			return nil, fmt.Errorf("audit: a point chunk's point at sequence %d, forecast %d of %d×%d", pt.Seq, pt.Forecast, len(c.Seqs), nf)
		}
	}
	basis := &table.ShiftBasis{P: f.P, U: f.U}
	err = s.run(ctx, false, true, func(_ int, _ *group, _, rows [][][]float64) error {
		out, err = table.MapPointChunk(basis, c, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// chunkRunner runs the chunks of one stage on a worker, the stage's
// shared value decoded once.
type chunkRunner struct {
	w      *Worker
	kind   table.StageKind
	factor *table.FactorSpec
	blocks *blockSpec
	table  *table.TableSpec
}

// Runner returns the runner of the chunks of a stage of kind whose
// shared value is shared (table.Stage.Shared). w may be nil for
// table.StageFinalize, which reads no model.
func (w *Worker) Runner(kind table.StageKind, shared []byte) (table.Runner, error) {
	r := &chunkRunner{w: w, kind: kind}
	switch kind {
	case table.StageBlocks, table.StagePoints:
		if w == nil {
			return nil, fmt.Errorf("audit: the %s stage needs a worker's problem", kind)
		}
		f := &table.FactorSpec{}
		if err := f.UnmarshalBinary(shared); err != nil {
			return nil, err
		}
		s, err := blockSpecOf(f)
		if err != nil {
			return nil, err
		}
		if f.Problem != w.digest {
			return nil, fmt.Errorf("audit: the worker's model, data or options differ from the driver's (problem digest %x, the driver's %x): give the workers the same files and flags", w.digest[:6], f.Problem[:6])
		}
		if f.P != len(w.p.theta) {
			return nil, fmt.Errorf("audit: a factor of %d parameters, the model has %d", f.P, len(w.p.theta))
		}
		r.factor, r.blocks = f, s
	case table.StageFinalize:
		t := &table.TableSpec{}
		if err := t.UnmarshalBinary(shared); err != nil {
			return nil, err
		}
		r.table = t
	default:
		return nil, fmt.Errorf("audit: unknown stage %v", kind)
	}
	return r, nil
}

// Run runs one chunk (encoded) and returns its output (encoded).
func (r *chunkRunner) Run(ctx context.Context, chunk []byte) ([]byte, error) {
	switch r.kind {
	case table.StageBlocks:
		return runChunk(chunk, &table.BlockChunk{}, func(c *table.BlockChunk) (encoder, error) {
			return r.w.blockChunk(ctx, r.blocks, c)
		})
	case table.StagePoints:
		return runChunk(chunk, &table.PointChunk{}, func(c *table.PointChunk) (encoder, error) {
			recs, err := r.w.pointChunk(ctx, r.factor, c)
			return pointRecords(recs), err
		})
	default:
		return runChunk(chunk, &table.FinalizeChunk{}, func(c *table.FinalizeChunk) (encoder, error) {
			out, err := r.table.Finalize(c)
			return &out, err
		})
	}
}

// runChunk decodes chunk into c, runs it and encodes its output.
func runChunk[C interface{ UnmarshalBinary([]byte) error }](chunk []byte, c C, run func(C) (encoder, error)) ([]byte, error) {
	if err := c.UnmarshalBinary(chunk); err != nil {
		return nil, err
	}
	out, err := run(c)
	if err != nil {
		return nil, err
	}
	return out.MarshalBinary()
}

// pointRecords is a point chunk's output, encoded by table.EncodePoints.
type pointRecords []table.PointRecord

func (p pointRecords) MarshalBinary() ([]byte, error) { return table.EncodePoints(p), nil }

// encoder is a value with a binary encoding.
type encoder = encoding.BinaryMarshaler
