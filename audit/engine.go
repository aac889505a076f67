package audit

// The engine seam of the LowRank path (issue 19): the three stages of an
// audit that an executor can run elsewhere (Apache Beam's Go SDK on
// Flink, Spark or Dataflow: cmd/audit-beam, a module of its own), as
// chunk functions over encoded values, and the in-process path that
// calls the same functions. This file imports nothing of any engine.
//
//	stage     chunk                     shared (once per worker)   output
//	blocks    BlockChunk: one batch of   FactorSpec: the factor's    BlockChunkOut: per block its
//	          training sequences, their  rows U, its solve in U's    record, |g_b|, |delta_b|,
//	          blocks and loss terms      coordinates, the loss, the  shift and leverage; the sum
//	                                     forecast slots, the rule    of the sequences' gradients
//	points    PointChunk: one batch of   FactorSpec                  PointRecords
//	          evaluated sequences and
//	          their points
//	finalize  FinalizeChunk: points'     TableSpec: the block table  ChunkLimits: limits, m,
//	          records                    and the levels              coverage counts
//
// A worker builds the audit's problem once (NewWorker: the model, the
// data and the options, read from the same files as the driver's) and
// runs chunks with a ChunkRunner. The curvature, the probes, the
// refinement of Newton steps and the summary stay on the driver; the
// driver folds the chunks' outputs in chunk order (the gradient sum, the
// coverage counts), so the result does not depend on the order in which
// an engine runs the chunks.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// StageKind names one of the three stages an Executor runs.
type StageKind int

const (
	// StageBlocks is the block pass: BlockChunk in, BlockChunkOut out,
	// FactorSpec shared.
	StageBlocks StageKind = iota + 1
	// StagePoints is the test pass: PointChunk in, PointRecords out
	// (EncodePoints), FactorSpec shared.
	StagePoints
	// StageFinalize is the limits: FinalizeChunk in, ChunkLimits out,
	// TableSpec shared.
	StageFinalize
)

func (k StageKind) String() string {
	switch k {
	case StageBlocks:
		return "blocks"
	case StagePoints:
		return "points"
	case StageFinalize:
		return "finalize"
	}
	return fmt.Sprintf("StageKind(%d)", int(k))
}

// Stage is one pipeline run of an Executor: the encoded inputs of its
// chunks and the encoded value they all read.
type Stage struct {
	Kind StageKind
	// Shared is what every chunk reads (FactorSpec or TableSpec, encoded):
	// megabytes, so an executor sends it once per worker (as a file), not
	// with every chunk.
	Shared []byte
	// Chunks are the chunks' inputs, encoded; their outputs are numbered
	// like them.
	Chunks [][]byte
}

// Executor runs the chunks of a Stage, anywhere and in any order, each
// with a ChunkRunner of Worker.Runner (the worker's problem built by
// NewWorker from the same model, data and options as the driver's), and
// gives every output to emit with its chunk's index. emit may be called
// concurrently; an error from emit ends the stage with that error.
// Options.Executor nil runs the chunks in process.
type Executor interface {
	Execute(ctx context.Context, s *Stage, emit func(chunk int, out []byte) error) error
}

// WorkerSpec names what a worker reads to build the audit's problem: the
// same files, read the same way, as the driver. It is plain values
// (JSON), so that it travels in a pipeline; the stages' shared values
// travel apart (Stage.Shared). Audit reads none of it: the command that
// drives an executor fills it and turns it back into NewWorker's
// arguments on the workers.
type WorkerSpec struct {
	// Model, Train, Test and Calibration are the files' URIs (Test
	// empty: a self-audit; Calibration empty: none).
	Model, Train, Test, Calibration string
	// Read are the options that read the data files and Options those of
	// the audit, in the command's own form.
	Read, Options []byte
}

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
	fmt.Fprintf(h, "%d %v %q %d %d %g %q %d %d|", o.Layout, inputs, o.Output, o.Horizons, o.Loss, o.Ridge, o.Params, o.Blocks, o.BlockLength)
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

// FactorSpec is what the block and point stages share: the low-rank
// factor's rows U (k×P) and its solve in their coordinates, the loss, the
// forecast slots of the block table ((row, horizon) pairs, in slot
// order) and the block pass's rule (WithRows: per-block Jacobian rows;
// Newton: Newton steps, else infinitesimal ones).
type FactorSpec struct {
	P        int
	U        []float64
	Reduced  hvp.Reduced
	Loss     hvp.Loss
	Slots    [][2]int
	WithRows bool
	Newton   bool
	// Problem is the digest of the driver's problem (problem.digest): a
	// worker whose model, data or options differ refuses the stage.
	Problem      [32]byte
	cachedSlots  map[forecast]int
	cachedBlocks *blockSpec
	once         sync.Once
}

// newFactorSpec is the driver's FactorSpec for problem p.
func newFactorSpec(p *problem, U []float64, red hvp.Reduced, slots map[forecast]int, withRows, newton bool) *FactorSpec {
	f := &FactorSpec{P: len(p.theta), U: U, Reduced: red, Loss: p.opt.Loss, Slots: make([][2]int, len(slots)), WithRows: withRows, Newton: newton}
	if p.opt.Executor != nil {
		f.Problem = p.digest() // only a worker checks it
	}
	for fc, s := range slots {
		f.Slots[s] = [2]int{fc.T, fc.H}
	}
	return f
}

// init checks f and builds its block spec and slot map once.
func (f *FactorSpec) init() error {
	var err error
	f.once.Do(func() {
		if f.P <= 0 || len(f.U)%f.P != 0 || len(f.U)/f.P != len(f.Reduced.D) {
			err = fmt.Errorf("audit: a factor of %d floats for %d parameters and %d coordinates", len(f.U), f.P, len(f.Reduced.D))
			return
		}
		f.cachedSlots = make(map[forecast]int, len(f.Slots))
		for s, fc := range f.Slots {
			f.cachedSlots[forecast{T: fc[0], H: fc[1]}] = s
		}
		f.cachedBlocks = &blockSpec{red: f.Reduced, U: f.U, P: f.P, proj: newProjector(f.U, f.P), loss: f.Loss, slots: f.cachedSlots, withRows: f.WithRows, newton: f.Newton}
	})
	if err == nil && f.cachedBlocks == nil {
		err = fmt.Errorf("audit: an invalid factor")
	}
	return err
}

// BlockChunk is one chunk of the block pass: one batch of training
// sequences of equal length (indices into the training set, in the
// driver's batch order), with per sequence its block (-1: none), the
// block's label and its loss terms at theta_hat.
type BlockChunk struct {
	seqs, blocks []int
	labels       []string
	terms        [][]ownTerm
}

// BlockChunkOut is a block chunk's output: per sequence of the chunk its
// BlockRecord and figures, and the sum of its gradients.
type BlockChunkOut struct {
	blockPassOut
}

// PointChunk is one chunk of the test pass: one batch of sequences of
// equal length of the evaluated set (or of the calibration set, Cal),
// and their points: per point the sequence's position in the batch, the
// forecast's position, the prediction, the forecast slot, the block left
// out, and the target when labelled.
type PointChunk struct {
	cal    bool
	seqs   []int
	points []chunkPoint
}

type chunkPoint struct {
	b, k     int
	f        float64
	slot     int
	skip     int
	y        float64
	labelled bool
}

// TableSpec is what the finalize stage shares: the combined block table
// and the levels (Alpha the interval's; Alphas those of the calibration
// curve, empty for calibration points).
type TableSpec struct {
	Alpha  float64
	Alphas []float64
	Table  BlockTable
	// index is the table's limitsIndex, built by the first Finalize.
	index     *limitsIndex
	indexOnce sync.Once
}

// FinalizeChunk is one chunk of the finalize stage: the records of
// consecutive evaluation points.
type FinalizeChunk struct {
	Points []PointRecord
}

// BlockChunk runs the block pass on chunk c with the factor f: the
// gradients (and, f.WithRows, the output-Jacobian rows) of its sequences
// on this worker, then mapBlockChunk, which the in-process path calls on
// the same values.
func (w *Worker) BlockChunk(ctx context.Context, f *FactorSpec, c *BlockChunk) (out *BlockChunkOut, err error) {
	defer catchInternal(&err)
	if err := w.check(f); err != nil {
		return nil, err
	}
	p := w.p
	if err := c.check(p.train.Len()); err != nil {
		return nil, err
	}
	gr, err := p.chunkGroup(p.train, c.seqs)
	if err != nil {
		return nil, err
	}
	s := newGroupStream(p, []*group{gr})
	err = s.run(ctx, true, f.WithRows, func(_ int, _ *group, grads, rows [][][]float64) error {
		out, err = f.cachedBlocks.mapChunk(c, grads, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check checks that the factor f fits the worker's model.
func (w *Worker) check(f *FactorSpec) error {
	if err := f.init(); err != nil {
		return err
	}
	if f.P != len(w.p.theta) {
		return fmt.Errorf("audit: a factor of %d parameters, the model has %d", f.P, len(w.p.theta))
	}
	return nil
}

// mapChunk is the block pass's map step on a chunk whose gradients and
// Jacobian rows are computed (batchFunc's grads and rows).
func (s *blockSpec) mapChunk(c *BlockChunk, grads, rows [][][]float64) (*BlockChunkOut, error) {
	in := blockChunk{grads: make([][]float64, len(c.seqs)), rows: rows, terms: c.terms, blocks: c.blocks, labels: c.labels}
	for b := range c.seqs {
		in.grads[b] = grads[b][0]
	}
	res, err := s.mapBlockChunk(in)
	if err != nil {
		return nil, err
	}
	return &BlockChunkOut{*res}, nil
}

// check checks a chunk's lengths and indices against a training set of n
// sequences.
func (c *BlockChunk) check(n int) error {
	m := len(c.seqs)
	if len(c.blocks) != m || len(c.labels) != m || len(c.terms) != m || m == 0 {
		return fmt.Errorf("audit: a block chunk of %d sequences, %d blocks, %d labels and %d term lists", m, len(c.blocks), len(c.labels), len(c.terms))
	}
	for _, i := range c.seqs {
		if i < 0 || i >= n {
			return fmt.Errorf("audit: a block chunk names training sequence %d of %d", i, n)
		}
	}
	return nil
}

// PointChunk runs the test pass on chunk c with the factor f: the
// output-Jacobian rows of its sequences on this worker, then MapPoints.
func (w *Worker) PointChunk(ctx context.Context, f *FactorSpec, c *PointChunk) (out []PointRecord, err error) {
	defer catchInternal(&err)
	if err := w.check(f); err != nil {
		return nil, err
	}
	p := w.p
	d := p.eval
	if c.cal {
		d = p.cal
		if d == nil {
			return nil, fmt.Errorf("audit: a point chunk of calibration sequences, the worker has no calibration set")
		}
	}
	for _, i := range c.seqs {
		if i < 0 || i >= d.Len() {
			return nil, fmt.Errorf("audit: a point chunk names sequence %d of %d", i, d.Len())
		}
	}
	gr, err := p.chunkGroup(d, c.seqs)
	if err != nil {
		return nil, err
	}
	s := newGroupStream(p, []*group{gr})
	nf := len(p.io.forecasts(gr.T))
	for _, pt := range c.points {
		if pt.b < 0 || pt.b >= len(c.seqs) || pt.k < 0 || pt.k >= nf {
			return nil, fmt.Errorf("audit: a point chunk's point at sequence %d, forecast %d of %d×%d", pt.b, pt.k, len(c.seqs), nf)
		}
	}
	basis := &ShiftBasis{P: f.P, U: f.U}
	err = s.run(ctx, false, true, func(_ int, _ *group, _, rows [][][]float64) error {
		out, err = mapPointChunk(basis, c, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mapPointChunk is the test pass's map step on a chunk whose Jacobian
// rows are computed: MapPoints, then each record's Skip and target.
func mapPointChunk(basis *ShiftBasis, c *PointChunk, rows [][][]float64) ([]PointRecord, error) {
	jac := make([][]float64, len(c.points))
	fx := make([]float64, len(c.points))
	slot := make([]int, len(c.points))
	for a, pt := range c.points {
		jac[a], fx[a], slot[a] = rows[pt.b][pt.k], pt.f, pt.slot
	}
	recs, err := MapPoints(basis, jac, fx, slot)
	if err != nil {
		return nil, err
	}
	for a, pt := range c.points {
		recs[a].Skip = pt.skip
		if pt.labelled {
			recs[a].Y, recs[a].Labelled = pt.y, true
		}
	}
	return recs, nil
}

// Finalize runs the finalize stage on chunk c: FinalizeLimits with the
// table and levels of t.
func (t *TableSpec) Finalize(c *FinalizeChunk) (ChunkLimits, error) {
	return t.finalize(c.Points)
}

// ChunkRunner runs the chunks of one stage on a worker, the stage's
// shared value decoded once.
type ChunkRunner struct {
	w      *Worker
	kind   StageKind
	factor *FactorSpec
	table  *TableSpec
}

// Runner returns the runner of the chunks of a stage of kind whose
// shared value is shared (Stage.Shared). w may be nil for StageFinalize,
// which reads no model.
func (w *Worker) Runner(kind StageKind, shared []byte) (*ChunkRunner, error) {
	r := &ChunkRunner{w: w, kind: kind}
	switch kind {
	case StageBlocks, StagePoints:
		if w == nil {
			return nil, fmt.Errorf("audit: the %s stage needs a worker's problem", kind)
		}
		f := &FactorSpec{}
		if err := f.UnmarshalBinary(shared); err != nil {
			return nil, err
		}
		if err := f.init(); err != nil {
			return nil, err
		}
		if f.Problem != w.digest {
			return nil, fmt.Errorf("audit: the worker's model, data or options differ from the driver's (problem digest %x, the driver's %x): give the workers the same files and flags", w.digest[:6], f.Problem[:6])
		}
		r.factor = f
	case StageFinalize:
		t := &TableSpec{}
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
func (r *ChunkRunner) Run(ctx context.Context, chunk []byte) ([]byte, error) {
	switch r.kind {
	case StageBlocks:
		return runChunk(chunk, &BlockChunk{}, func(c *BlockChunk) (encoder, error) {
			return r.w.BlockChunk(ctx, r.factor, c)
		})
	case StagePoints:
		return runChunk(chunk, &PointChunk{}, func(c *PointChunk) (encoder, error) {
			recs, err := r.w.PointChunk(ctx, r.factor, c)
			return pointRecords(recs), err
		})
	default:
		return runChunk(chunk, &FinalizeChunk{}, func(c *FinalizeChunk) (encoder, error) {
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

// pointRecords is a point chunk's output, encoded by EncodePoints.
type pointRecords []PointRecord

func (p pointRecords) MarshalBinary() ([]byte, error) { return EncodePoints(p), nil }

// execute runs a stage through e, decoding each output with decode
// (which may be called concurrently).
func execute(ctx context.Context, e Executor, kind StageKind, shared encoder, chunks []encoder, decode func(c int, out []byte) error) error {
	sh, err := shared.MarshalBinary()
	if err != nil {
		return err
	}
	s := &Stage{Kind: kind, Shared: sh, Chunks: make([][]byte, len(chunks))}
	for c, ch := range chunks {
		if s.Chunks[c], err = ch.MarshalBinary(); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	seen := make([]bool, len(chunks))
	err = e.Execute(ctx, s, func(c int, out []byte) error {
		if c < 0 || c >= len(chunks) {
			return fmt.Errorf("audit: the executor gave an output of chunk %d of %d", c, len(chunks))
		}
		mu.Lock()
		dup := seen[c]
		seen[c] = true
		mu.Unlock()
		if dup {
			return fmt.Errorf("audit: the executor gave chunk %d of the %s stage twice", c, kind)
		}
		if err := decode(c, out); err != nil {
			return errs.Wrapf(err, "audit: %s stage, chunk %d: ", kind, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if i := slices.Index(seen, false); i >= 0 {
		return fmt.Errorf("audit: the executor gave no output of chunk %d of the %s stage", i, kind)
	}
	return nil
}

// encoder is a value with a binary encoding.
type encoder interface{ MarshalBinary() ([]byte, error) }

// check checks that o is the output of a chunk of n sequences with P
// parameters (withRows: with leverage). Its gradient is any number of
// vectors of P floats (TakeBlockGradient, PutBlockGradient).
func (o *BlockChunkOut) check(n, P int, withRows bool) error {
	ok := len(o.recs) == n && len(o.gnorm) == n && len(o.norms) == n && len(o.shift) == n && len(o.total)%P == 0
	if withRows {
		ok = ok && len(o.lev) == n && len(o.levMax) == n && len(o.unbounded) == n
	}
	if !ok {
		return fmt.Errorf("audit: a block chunk's output of %d records and a gradient of %d floats, want %d and a multiple of %d", len(o.recs), len(o.total), n, P)
	}
	return nil
}
