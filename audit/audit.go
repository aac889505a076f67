package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// InternalError is a bug in rnnaudit met while auditing: the message says
// so in one line; Stack holds the goroutine stack for the bug report.
type InternalError struct {
	Value any
	Stack []byte
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("audit: internal error (please report it with the command that caused it): %v", e.Value)
}

// group is a set of sequences of equal length evaluated as one batch.
type group struct {
	T      int
	seqs   []int // indices into the dataset
	prog   *graph.Program
	in     []*graph.Tensor
	target []float64 // in output layout; 0 where there is no target
	weight []float64 // 1 where a loss term exists, else 0
}

// run holds the state of one audit.
type run struct {
	ctx   context.Context
	opt   Options
	g     *graph.Graph
	io    *modelIO
	train *blocks.Dataset
	eval  *blocks.Dataset // the test set, or the training set in a self-audit
	self  bool
	res   *Result

	theta    []float64
	groups   []*group       // training sequences by length
	parts    []*group       // one per training sequence (batch 1)
	chunks   []*group       // training sequences by length, at most chunkSize per batch
	chunkObj *hvp.Objective // over chunks, kept across calls of sequenceGradients
	partObj  *hvp.Objective // over parts, likewise
	// separate: per-sequence gradients from one pass per sequence (the
	// model's batch entries do not separate, or a test asks for it).
	separate bool
	scheme   *blocks.Scheme

	delta [][]float64 // theta_-b - theta_hat per block
	// Residual entries by forecast (row, horizon), and the in-sample
	// residuals at theta_hat for the naive intervals.
	entries map[forecast][]entry
	naive   map[forecast][]float64
	// Evaluation forecasts and their unperturbed predictions.
	evalGroups []*group
	points     []point
	// The calibration set (nil without one), its groups and forecasts;
	// perturbedPredictions evaluates them after the evaluation points.
	cal        *blocks.Dataset
	calGroups  []*group
	calPoints  []point
	workers    int
	phaseStart time.Time
	base       *newtonEig // Hessian of the full loss at theta_hat, for re-training
	// own holds, per block, the Newton estimator's own-block residuals
	// (nil entries and nil slice: from a forward pass at theta_-b).
	own []*ownBlock
	// ownForward takes the Newton estimator's own-block residuals from a
	// forward pass at theta_-b instead of the linearised model (for
	// measurements; unbounded blocks stay unbounded).
	ownForward bool
	// lev and levMax are, per block, the leverage of its own terms (the
	// diagonal of S) and S's largest eigenvalue (Newton estimator).
	lev    [][]float64
	levMax []float64
}

// entry is one leave-one-block-out residual: of training sequence seq,
// for block blk.
type entry struct {
	blk int
	seq int
	r   float64
}

// point is one forecast of an evaluated sequence.
type point struct {
	seq   int // index into eval dataset
	f     forecast
	group int // eval group
	pos   int // index into the group's output
	pred  float64
	y     float64
	has   bool // target known
}

// Run audits a trained model: from the training data it estimates every
// leave-one-block-out model by influence, collects the leave-one-block-out
// residuals, and gives every forecast of the test sequences a jackknife+
// interval (DESIGN sections 3 to 6). Without test data (test nil) it
// audits the training set itself, leaving one sequence out. The model is
// not modified.
func Run(ctx context.Context, model *graph.Graph, train, test *blocks.Dataset, opt *Options) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &InternalError{Value: r, Stack: debug.Stack()}
		}
	}()
	if opt == nil {
		opt = &Options{}
	}
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if train == nil || train.Len() == 0 {
		return nil, errors.New("audit: no training sequences")
	}
	if !train.Labelled() {
		return nil, fmt.Errorf("audit: the training data %s has no target column", train.File)
	}
	if len(train.Targets) != 1 {
		return nil, fmt.Errorf("audit: %d target columns (%v): one target column is supported", len(train.Targets), train.Targets)
	}
	if test != nil {
		if err := blocks.CheckCompatible(train, test); err != nil {
			return nil, err
		}
	}
	if o.Calibration != nil {
		if err := checkCalibration(train, test, o.Calibration); err != nil {
			return nil, err
		}
	}
	g := model
	if o.Params != "" {
		keep, err := graph.ParamPattern(o.Params)
		if err != nil {
			return nil, err
		}
		if g, err = g.Restrict(keep); err != nil {
			return nil, fmt.Errorf("audit: parameter pattern %q (Options.Params): %w", o.Params, err)
		}
	}
	r := &run{ctx: ctx, opt: o, g: g, train: train, eval: test, cal: o.Calibration, theta: g.Theta(), workers: o.Workers, ownForward: o.ownForward}
	if r.workers <= 0 {
		r.workers = runtime.GOMAXPROCS(0)
	}
	if test == nil {
		r.eval, r.self = train, true
	}
	return r.run()
}

func (r *run) phase(name string) {
	now := time.Now()
	if !r.phaseStart.IsZero() && len(r.res.Diag.Phases) > 0 {
		last := &r.res.Diag.Phases[len(r.res.Diag.Phases)-1]
		last.Seconds = now.Sub(r.phaseStart).Seconds()
	}
	if name != "" {
		r.res.Diag.Phases = append(r.res.Diag.Phases, Phase{Name: name})
	}
	r.phaseStart = now
	r.opt.progress(name, 0, 0)
}

func (r *run) run() (*Result, error) {
	o := &r.opt
	var err error
	r.res = &Result{SelfAudit: r.self}
	r.phase("prepare")
	if err := r.train.CheckFeatures(dimOf(r.g, r.train)); err != nil {
		return nil, err
	}
	if r.io, err = newModelIO(r.g, o.Layout, len(r.train.Features)); err != nil {
		return nil, err
	}
	if r.scheme, err = blocks.NewScheme(r.train, o.Blocks, o.BlockLength); err != nil {
		return nil, err
	}
	if len(r.scheme.Blocks) < 2 {
		return nil, fmt.Errorf("audit: only %d block(s) with targets: jackknife+ needs several training sequences", len(r.scheme.Blocks))
	}
	r.describe()
	if r.groups, err = r.makeGroups(r.train, wholeBatch); err != nil {
		return nil, err
	}
	if r.parts, err = r.makeGroups(r.train, 1); err != nil {
		return nil, err
	}
	if r.evalGroups, err = r.makeGroups(r.eval, wholeBatch); err != nil {
		return nil, err
	}
	if err := r.predictEval(); err != nil {
		return nil, err
	}
	if r.cal != nil {
		if r.calGroups, err = r.makeGroups(r.cal, wholeBatch); err != nil {
			return nil, err
		}
		if r.calPoints, err = r.pointsOf(r.cal, r.calGroups); err != nil {
			return nil, err
		}
	}

	r.phase("block gradients")
	grads, err := r.blockGradients()
	if err != nil {
		return nil, err
	}
	r.phase("curvature and solve")
	if err := r.solve(grads); err != nil {
		return nil, err
	}
	r.phase("leave-one-block-out residuals")
	if err := r.residuals(); err != nil {
		return nil, err
	}
	r.phase("intervals")
	preds, err := r.perturbedPredictions("intervals", r.delta, nil)
	if err != nil {
		return nil, err
	}
	r.intervals(preds)
	if o.Retrain != 0 {
		r.phase("exact re-training")
		if err := r.retrain(); err != nil {
			return nil, err
		}
	}
	r.phase("")
	return r.res, nil
}

// dimOf is the feature count the model declares, or the data's when the
// model leaves it open.
func dimOf(g *graph.Graph, d *blocks.Dataset) int {
	for _, in := range g.Inputs {
		if dt, _ := in.Elem.DType(); dt == graph.Float && len(in.Dims) == 3 && in.Dims[2].Value >= 0 {
			return in.Dims[2].Value
		}
	}
	return len(d.Features)
}

func (r *run) describe() {
	o := &r.opt
	res := r.res
	res.Model = ModelInfo{Path: o.ModelPath, Opset: r.g.Opset, Layout: o.Layout.String(), Features: r.io.d,
		Horizons: r.io.K, ManyToOne: !r.io.perStep, Params: r.g.NumParams()}
	for _, p := range r.g.Params() {
		res.Model.ParamNames = append(res.Model.ParamNames, p.Name)
	}
	res.Setting = Setting{
		Alpha: o.Alpha, Blocks: r.scheme.Kind.String(), NumBlocks: len(r.scheme.Blocks),
		Solver: string(r.solverName()), Estimator: string(o.Estimator), Curvature: o.Curvature.String(), Damping: o.Damping,
		Loss: o.Loss.String(), Seed: o.Seed, Ridge: o.Ridge,
		TrainFile: r.train.File, TrainSeqs: r.train.Len(), TestSeqs: r.eval.Len(),
		Notes: r.scheme.Notes, Low: o.Low, High: o.High,
		NominalCover: 1 - o.Alpha, GuaranteedMin: 1 - 2*o.Alpha,
	}
	if o.Damping == 0 {
		res.Setting.Damping = hvp.DefaultDampingFor(o.Curvature, o.Ridge)
	}
	if r.scheme.Kind != blocks.Sequences {
		res.Setting.BlockLength = r.scheme.K
	}
	if !r.self {
		res.Setting.TestFile = r.eval.File
	} else {
		res.Setting.Notes = append(res.Setting.Notes, "No test data: each training sequence's intervals are built from the other blocks (leave one sequence out); coverage describes the training set.")
	}
}

func (r *run) solverName() Solver {
	if r.opt.Solver != Auto {
		return r.opt.Solver
	}
	if r.g.NumParams() <= AutoExactMax {
		return Exact
	}
	return CG
}

// makeGroups batches the sequences of d by length, at most maxBatch per
// batch (no limit when 0; 1 gives one part per sequence), with targets and
// weights in the model's output layout.
func (r *run) makeGroups(d *blocks.Dataset, maxBatch int) ([]*group, error) {
	byLen := map[int][]int{}
	var lens []int
	for i, s := range d.Seqs {
		T := s.Len()
		if _, ok := byLen[T]; !ok {
			lens = append(lens, T)
		}
		byLen[T] = append(byLen[T], i)
	}
	sort.Ints(lens)
	var out []*group
	add := func(T int, idx []int) error {
		seqs := make([]*blocks.Sequence, len(idx))
		for k, i := range idx {
			seqs[k] = d.Seqs[i]
		}
		p, in, err := r.io.program(len(idx), T, seqs)
		if err != nil {
			return err
		}
		B := len(idx)
		n := B * r.io.K
		if r.io.perStep {
			n *= T
		}
		gr := &group{T: T, seqs: idx, prog: p, in: in, target: make([]float64, n), weight: make([]float64, n)}
		for b, s := range seqs {
			for _, f := range r.io.forecasts(T) {
				row := f.T + f.H
				if row < T && s.Y != nil && s.Y[row] != nil {
					q := r.io.index(B, T, b, f.T, f.H)
					gr.target[q] = s.Y[row][0]
					gr.weight[q] = 1
				}
			}
		}
		out = append(out, gr)
		return nil
	}
	for _, T := range lens {
		idx := byLen[T]
		size := len(idx)
		if maxBatch > 0 {
			// Batches of equal size (to one), so that they share one or
			// two compiled programs.
			c := (len(idx) + maxBatch - 1) / maxBatch
			size = (len(idx) + c - 1) / c
		}
		for lo := 0; lo < len(idx); lo += size {
			if err := add(T, idx[lo:min(lo+size, len(idx))]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// objective makes an hvp objective over groups.
func (r *run) objective(groups []*group) *hvp.Objective {
	o := &hvp.Objective{Loss: r.opt.Loss, Workers: r.workers, Ridge: r.opt.Ridge}
	for _, gr := range groups {
		o.Batches = append(o.Batches, hvp.Batch{Program: gr.prog, Inputs: gr.in, Target: gr.target, Weight: gr.weight})
	}
	return o
}

// predictEval evaluates the unperturbed model on the evaluation set and
// lists its forecasts.
func (r *run) predictEval() error {
	var err error
	r.points, err = r.pointsOf(r.eval, r.evalGroups)
	return err
}

// pointsOf evaluates the unperturbed model on the groups of dataset d and
// lists their forecasts, by sequence, then row, then horizon.
func (r *run) pointsOf(d *blocks.Dataset, groups []*group) ([]point, error) {
	var points []point
	for gi, gr := range groups {
		s := gr.prog.NewState()
		outs, err := s.Forward(r.theta, gr.in)
		if err != nil {
			return nil, err
		}
		B := len(gr.seqs)
		for b, i := range gr.seqs {
			seq := d.Seqs[i]
			for _, f := range r.io.forecasts(gr.T) {
				q := r.io.index(B, gr.T, b, f.T, f.H)
				pt := point{seq: i, f: f, group: gi, pos: q, pred: outs[0].F[q]}
				if row := f.T + f.H; row < gr.T && seq.Y != nil && seq.Y[row] != nil {
					pt.y, pt.has = seq.Y[row][0], true
				}
				points = append(points, pt)
			}
		}
	}
	// A stable order: by sequence, then row, then horizon.
	sort.SliceStable(points, func(a, b int) bool {
		pa, pb := points[a], points[b]
		if pa.seq != pb.seq {
			return pa.seq < pb.seq
		}
		if pa.f.T != pb.f.T {
			return pa.f.T < pb.f.T
		}
		return pa.f.H < pb.f.H
	})
	return points, nil
}

// maskRows returns a weight vector of group gr keeping only the terms
// whose target row is in [lo, hi).
func (r *run) maskRows(gr *group, lo, hi int) []float64 {
	w := make([]float64, len(gr.weight))
	B := len(gr.seqs)
	for b := 0; b < B; b++ {
		for _, f := range r.io.forecasts(gr.T) {
			if row := f.T + f.H; row >= lo && row < hi {
				q := r.io.index(B, gr.T, b, f.T, f.H)
				w[q] = gr.weight[q]
			}
		}
	}
	return w
}

// wholeBatch is the most sequences per batch of the training objective
// and of the evaluated sets: one batch of every sequence of a length made
// every curvature product one huge program (10,000 LSTM sequences: 3.25 GB
// peak per product, against 335 MB and half the time in batches of 500).
// The training and evaluation groups share it, so that in a self-audit a
// point's in-sample residual and its |y - prediction| come from the same
// batches and are the same float.
const wholeBatch = 512

// chunkSize is the most sequences per batch for per-sequence gradients:
// enough batches to keep every core busy, each small enough to stay in
// cache.
const chunkSize = 256

// sequenceGradients returns, for every training sequence, the gradient of
// its loss terms whose target row is in [lo, hi): from batched passes split
// by sequence (hvp.Objective.ExampleGradients), or, for a model whose
// batch entries do not separate (or when r.separate is set), from one
// backward pass per sequence.
func (r *run) sequenceGradients(lo, hi int) ([][]float64, error) {
	return r.sequenceGrads(func(gr *group) []float64 { return r.maskRows(gr, lo, hi) }, false)
}

// sequenceGrads returns, for every training sequence, the gradient of its
// loss terms that mask keeps (mask gives a group's weights), or with
// outputs set the gradient of the kept outputs' weighted sum
// (hvp.Job.Outputs): rows of the output Jacobian when mask keeps one term
// per sequence.
func (r *run) sequenceGrads(mask func(gr *group) []float64, outputs bool) ([][]float64, error) {
	n := r.train.Len()
	out := make([][]float64, n)
	if !r.separate {
		if r.chunks == nil {
			var err error
			if r.chunks, err = r.makeGroups(r.train, chunkSize); err != nil {
				return nil, err
			}
			// One objective for every call: it keeps the example
			// analyses and the evaluation buffers.
			r.chunkObj = r.objective(r.chunks)
			for c := range r.chunks {
				r.chunkObj.Batches[c].ExampleAxes = r.io.exampleAxes()
			}
		}
		jobs := make([]hvp.Job, len(r.chunks))
		res := make([][][]float64, len(r.chunks))
		for c, gr := range r.chunks {
			jobs[c] = hvp.Job{Batch: c, Weight: mask(gr), Outputs: outputs}
			res[c] = make([][]float64, len(gr.seqs))
		}
		err := r.chunkObj.ExampleGradients(r.ctx, r.theta, jobs, res, nil)
		if err == nil {
			for c, gr := range r.chunks {
				for b, i := range gr.seqs {
					out[i] = res[c][b]
				}
			}
			return out, nil
		}
		if !errors.Is(err, graph.ErrNotSeparable) {
			return nil, err
		}
		r.separate = true
	}
	if r.partObj == nil {
		r.partObj = r.objective(r.parts)
	}
	jobs := make([]hvp.Job, len(r.parts))
	idx := make([]int, len(r.parts))
	for pi, gr := range r.parts {
		jobs[pi] = hvp.Job{Batch: pi, Weight: mask(gr), Outputs: outputs}
		idx[pi] = gr.seqs[0]
	}
	res := make([][]float64, len(jobs))
	if err := r.partObj.Gradients(r.ctx, r.theta, jobs, res, nil); err != nil {
		return nil, err
	}
	for pi, i := range idx {
		out[i] = res[pi]
	}
	return out, nil
}

// blockGradients returns grad L_b for every block (DESIGN section 2):
// per-sequence gradients, and for interval and nested schemes per
// (sequence, interval) cell gradients combined by addition.
func (r *run) blockGradients() ([][]float64, error) {
	bl := r.scheme.Blocks
	out := make([][]float64, len(bl))
	if r.scheme.Kind == blocks.Sequences {
		seq, err := r.sequenceGradients(0, math.MaxInt)
		if err != nil {
			return nil, err
		}
		for k, b := range bl {
			out[k] = seq[b.Seq]
		}
		return out, nil
	}
	// cells[j][i]: the gradient of sequence i's terms in interval j.
	P := len(r.theta)
	n := r.train.Len()
	var cells [][][]float64
	for _, b := range bl {
		if b.Interval < 0 {
			continue
		}
		for len(cells) <= b.Interval {
			cells = append(cells, nil)
		}
		if cells[b.Interval] == nil {
			c, err := r.sequenceGradients(b.Lo, b.Hi)
			if err != nil {
				return nil, err
			}
			cells[b.Interval] = c
		}
	}
	seqGrad := func(i int) []float64 {
		s := make([]float64, P)
		for _, c := range cells {
			if c != nil {
				addTo(s, c[i], 1)
			}
		}
		return s
	}
	intGrad := make([][]float64, len(cells))
	for j, c := range cells {
		intGrad[j] = make([]float64, P)
		for i := 0; i < n && c != nil; i++ {
			addTo(intGrad[j], c[i], 1)
		}
	}
	for k, b := range bl {
		switch b.Kind {
		case blocks.Intervals:
			out[k] = slices.Clone(intGrad[b.Interval])
		case blocks.Nested:
			g := seqGrad(b.Seq)
			addTo(g, intGrad[b.Interval], 1)
			addTo(g, cells[b.Interval][b.Seq], -1)
			out[k] = g
		default:
			out[k] = seqGrad(b.Seq)
		}
	}
	return out, nil
}

func addTo(dst, src []float64, a float64) {
	for i, v := range src {
		dst[i] += a * v
	}
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// StationarityBound is the ratio of the total gradient to the median
// block gradient above which the audit warns that the model is not at a
// stationary point of its training loss (Warning NotStationary).
const StationarityBound = 0.2

// MismatchBound is the stationarity ratio above which the reports say that
// the data may not match the model (swapped feature columns gave ratios
// of 38 on the ChickWeight example, against 3e-5 with the right order).
// Adam-trained models stop at 10 to 250, so this is a statement for the
// headline, not a verdict.
const MismatchBound = 100.0

// solve computes theta_-b - theta_hat = (C + lambda I)^-1 grad L_b for
// every block (DESIGN section 4: the leave-one-out sign) and the
// stationarity diagnostic.
func (r *run) solve(grads [][]float64) error {
	whole := r.objective(r.groups)
	d := &r.res.Diag
	total := make([]float64, len(r.theta))
	if _, err := whole.Gradient(r.ctx, r.theta, total); err != nil {
		return err
	}
	norms := make([]float64, len(grads))
	for k, g := range grads {
		norms[k] = norm(g)
	}
	d.GradNorm = norm(total)
	d.BlockGradMedian = median(norms)
	if d.BlockGradMedian > 0 {
		d.Stationarity = d.GradNorm / d.BlockGradMedian
	}
	if d.Stationarity > StationarityBound {
		r.warn(Warning{Code: NotStationary, Step: -1, Figure: d.Stationarity, Bound: StationarityBound})
	}
	method := map[Solver]hvp.Method{Exact: hvp.Exact, CG: hvp.CG, LiSSA: hvp.LiSSA}[r.solverName()]
	opts := &hvp.Options{Method: method, Curvature: r.opt.Curvature, Damping: r.opt.Damping, Seed: r.opt.Seed,
		Progress: func(done, total int) { r.opt.progress("curvature and solve", done, total) }}
	obj := whole
	if method == hvp.LiSSA {
		obj = r.objective(r.parts)
		opts.Sample = r.lissaSampler()
	}
	f, rep, err := hvp.Factorize(r.ctx, obj, r.theta, opts)
	if err != nil {
		return err
	}
	x := make([][]float64, len(grads))
	if err := hvp.SolveRecorded(r.ctx, f, x, grads, rep); err != nil {
		return err
	}
	r.delta = x
	d.Lambda, d.Trace, d.MinEig, d.MaxEig = rep.Lambda, rep.Trace, rep.MinEig, rep.MaxEig
	d.NegativeEigenvalues = rep.NegativeEigs
	r.res.Setting.Damping = rep.Rho
	for k := range rep.Iterations {
		d.Iterations = max(d.Iterations, rep.Iterations[k])
		d.MaxResidual = math.Max(d.MaxResidual, rep.Residuals[k])
	}
	if rep.Trace <= 0 {
		r.warn(Warning{Code: NonPositiveTrace, Step: -1, Figure: rep.Trace})
	}
	if rep.NegativeEigs > 0 {
		r.warn(Warning{Code: Indefinite, Step: -1, Figure: rep.MinEig, Bound: -rep.Lambda, Count: rep.NegativeEigs})
	}
	if rep.Unconverged > 0 {
		r.warn(Warning{Code: SolverTolerance, Step: -1, Figure: d.MaxResidual, Bound: rep.Tol, Count: rep.Unconverged})
	}
	if r.opt.Estimator == Newton {
		if err := r.newtonCorrection(f); err != nil {
			return err
		}
	}
	d.InfluenceNorms = make([]float64, len(r.delta))
	for k, v := range r.delta {
		d.InfluenceNorms[k] = norm(v)
	}
	return nil
}

// lissaSampler draws, for LiSSA, training sequences (one part each) and
// with interval blocks truncates each to a prefix S_{1:Kj} of whole
// intervals, j drawn at random (blockwise batch sampling, DESIGN section
// 4); the scale n/size makes the sample's curvature an unbiased estimate
// of the whole one for sequence blocks.
func (r *run) lissaSampler() func(rnd *rand.Rand, size int) ([]hvp.Job, float64) {
	n := len(r.parts)
	K := r.scheme.K
	return func(rnd *rand.Rand, size int) ([]hvp.Job, float64) {
		jobs := make([]hvp.Job, size)
		for k := range jobs {
			i := rnd.IntN(n)
			jobs[k] = hvp.Job{Batch: i}
			if r.scheme.Kind != blocks.Sequences && K > 0 {
				gr := r.parts[i]
				J := (gr.T + K - 1) / K
				jobs[k].Weight = r.maskRows(gr, 0, K*(1+rnd.IntN(J)))
			}
		}
		return jobs, float64(n) / float64(size)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
