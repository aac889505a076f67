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

	theta  []float64
	groups []*group // training sequences by length
	parts  []*group // one per training sequence (batch 1)
	scheme *blocks.Scheme

	delta [][]float64 // theta_-b - theta_hat per block
	// Residual entries by forecast (row, horizon), and the in-sample
	// residuals at theta_hat for the naive intervals.
	entries map[forecast][]entry
	naive   map[forecast][]float64
	// Evaluation forecasts and their unperturbed predictions.
	evalGroups []*group
	points     []point
	workers    int
	phaseStart time.Time
	base       *newtonEig // Hessian of the full loss at theta_hat, for re-training
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
	g := model
	if o.Params != "" {
		keep, err := graph.ParamPattern(o.Params)
		if err != nil {
			return nil, err
		}
		if g, err = g.Restrict(keep); err != nil {
			return nil, fmt.Errorf("audit: --params %q: %w", o.Params, err)
		}
	}
	r := &run{ctx: ctx, opt: o, g: g, train: train, eval: test, theta: g.Theta(), workers: o.Workers}
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
	if r.groups, err = r.makeGroups(r.train, false); err != nil {
		return nil, err
	}
	if r.parts, err = r.makeGroups(r.train, true); err != nil {
		return nil, err
	}
	if r.evalGroups, err = r.makeGroups(r.eval, false); err != nil {
		return nil, err
	}
	if err := r.predictEval(); err != nil {
		return nil, err
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
		Solver: string(r.solverName()), Curvature: o.Curvature.String(), Damping: o.Damping,
		Loss: o.Loss.String(), Seed: o.Seed, Ridge: o.Ridge,
		TrainFile: r.train.File, TrainSeqs: r.train.Len(), TestSeqs: r.eval.Len(),
		Notes: r.scheme.Notes, Low: o.Low, High: o.High,
		NominalCover: 1 - o.Alpha, GuaranteedMin: 1 - 2*o.Alpha,
	}
	if o.Damping == 0 {
		res.Setting.Damping = hvp.DefaultDamping
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

// makeGroups batches the sequences of d by length, or one per sequence
// (parts), with targets and weights in the model's output layout.
func (r *run) makeGroups(d *blocks.Dataset, parts bool) ([]*group, error) {
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
		if parts {
			for _, i := range byLen[T] {
				if err := add(T, []int{i}); err != nil {
					return nil, err
				}
			}
		} else if err := add(T, byLen[T]); err != nil {
			return nil, err
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
	for gi, gr := range r.evalGroups {
		s := gr.prog.NewState()
		outs, err := s.Forward(r.theta, gr.in)
		if err != nil {
			return err
		}
		B := len(gr.seqs)
		for b, i := range gr.seqs {
			seq := r.eval.Seqs[i]
			for _, f := range r.io.forecasts(gr.T) {
				q := r.io.index(B, gr.T, b, f.T, f.H)
				pt := point{seq: i, f: f, group: gi, pos: q, pred: outs[0].F[q]}
				if row := f.T + f.H; row < gr.T && seq.Y != nil && seq.Y[row] != nil {
					pt.y, pt.has = seq.Y[row][0], true
				}
				r.points = append(r.points, pt)
			}
		}
	}
	// A stable order: by sequence, then row, then horizon.
	sort.SliceStable(r.points, func(a, b int) bool {
		pa, pb := r.points[a], r.points[b]
		if pa.seq != pb.seq {
			return pa.seq < pb.seq
		}
		if pa.f.T != pb.f.T {
			return pa.f.T < pb.f.T
		}
		return pa.f.H < pb.f.H
	})
	return nil
}

// maskRows returns a weight vector of part gr keeping only the terms whose
// target row is in [lo, hi).
func (r *run) maskRows(gr *group, lo, hi int) []float64 {
	w := make([]float64, len(gr.weight))
	for _, f := range r.io.forecasts(gr.T) {
		if row := f.T + f.H; row >= lo && row < hi {
			q := r.io.index(1, gr.T, 0, f.T, f.H)
			w[q] = gr.weight[q]
		}
	}
	return w
}

// blockGradients returns grad L_b for every block (DESIGN section 2):
// per-sequence gradients from one backward pass per sequence, and for
// interval and nested schemes per (sequence, interval) cell gradients
// combined by addition.
func (r *run) blockGradients() ([][]float64, error) {
	parts := r.objective(r.parts)
	P := len(r.theta)
	n := r.train.Len()
	partOf := make([]int, n)
	for pi, gr := range r.parts {
		partOf[gr.seqs[0]] = pi
	}
	bl := r.scheme.Blocks
	out := make([][]float64, len(bl))
	if r.scheme.Kind == blocks.Sequences {
		jobs := make([]hvp.Job, len(bl))
		for k, b := range bl {
			jobs[k] = hvp.Job{Batch: partOf[b.Seq]}
		}
		return out, parts.Gradients(r.ctx, r.theta, jobs, out, nil)
	}
	// Intervals of the scheme.
	type iv struct{ lo, hi int }
	ivs := map[int]iv{}
	for _, b := range bl {
		if b.Interval >= 0 {
			ivs[b.Interval] = iv{b.Lo, b.Hi}
		}
	}
	J := 0
	for j := range ivs {
		J = max(J, j+1)
	}
	var jobs []hvp.Job
	cellIdx := make([][]int, n) // job index per (sequence, interval), -1 none
	for i := 0; i < n; i++ {
		cellIdx[i] = make([]int, J)
		for j := 0; j < J; j++ {
			cellIdx[i][j] = -1
			v, ok := ivs[j]
			if !ok {
				continue
			}
			gr := r.parts[partOf[i]]
			w := r.maskRows(gr, v.lo, v.hi)
			if !slices.ContainsFunc(w, func(x float64) bool { return x != 0 }) {
				continue
			}
			cellIdx[i][j] = len(jobs)
			jobs = append(jobs, hvp.Job{Batch: partOf[i], Weight: w})
		}
	}
	cells := make([][]float64, len(jobs))
	if err := parts.Gradients(r.ctx, r.theta, jobs, cells, nil); err != nil {
		return nil, err
	}
	seqGrad := func(i int) []float64 {
		s := make([]float64, P)
		for j := 0; j < J; j++ {
			if c := cellIdx[i][j]; c >= 0 {
				addTo(s, cells[c], 1)
			}
		}
		return s
	}
	intGrad := make([][]float64, J)
	for j := 0; j < J; j++ {
		intGrad[j] = make([]float64, P)
		for i := 0; i < n; i++ {
			if c := cellIdx[i][j]; c >= 0 {
				addTo(intGrad[j], cells[c], 1)
			}
		}
	}
	for k, b := range bl {
		switch b.Kind {
		case blocks.Intervals:
			out[k] = slices.Clone(intGrad[b.Interval])
		case blocks.Nested:
			g := seqGrad(b.Seq)
			addTo(g, intGrad[b.Interval], 1)
			if c := cellIdx[b.Seq][b.Interval]; c >= 0 {
				addTo(g, cells[c], -1)
			}
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
	if d.Stationarity > 0.2 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("The model is not at a stationary point of its training loss: the total gradient is %.2g times the typical block gradient. Influence estimates assume a trained (converged) model; train longer or check that the data and loss match the training.", d.Stationarity))
	}
	method := map[Solver]hvp.Method{Exact: hvp.Exact, CG: hvp.CG, LiSSA: hvp.LiSSA}[r.solverName()]
	opts := &hvp.Options{Method: method, Curvature: r.opt.Curvature, Damping: r.opt.Damping, Seed: r.opt.Seed,
		Progress: func(done, total int) { r.opt.progress("curvature and solve", done, total) }}
	obj := whole
	if method == hvp.LiSSA {
		obj = r.objective(r.parts)
		opts.Sample = r.lissaSampler()
	}
	x, rep, err := hvp.Solve(r.ctx, obj, r.theta, grads, opts)
	if err != nil {
		return err
	}
	r.delta = x
	d.Lambda, d.Trace, d.MinEig, d.MaxEig = rep.Lambda, rep.Trace, rep.MinEig, rep.MaxEig
	for k := range rep.Iterations {
		d.Iterations = max(d.Iterations, rep.Iterations[k])
		d.MaxResidual = math.Max(d.MaxResidual, rep.Residuals[k])
	}
	d.Warnings = append(d.Warnings, rep.Warnings...)
	d.InfluenceNorms = make([]float64, len(x))
	for k, v := range x {
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
