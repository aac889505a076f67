package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/audit/solvecost"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// problem is what every phase of an audit reads and no phase writes: the
// options after defaults, the model and how to feed it, the trained
// parameters, the data sets, the block scheme and the batches the model
// is evaluated on. prepare builds it; nothing changes it afterwards (the
// model IO's program cache and the pool of States are safe for concurrent
// use).
type problem struct {
	opt     Options
	g       *graph.Graph // the model, restricted to Options.Params
	io      *modelio.IO
	theta   []float64 // the trained parameters theta_hat
	train   *blocks.Dataset
	eval    *blocks.Dataset // the test set, or the training set in a self-audit
	cal     *blocks.Dataset // the calibration set, or nil
	self    bool            // no test data: the training set is evaluated
	scheme  *blocks.Scheme
	workers int
	// groups batches the training sequences by length (at most wholeBatch
	// per batch: the training objective); parts has one batch per
	// training sequence (nil on the LowRank path, which never reads it); evalGroups and calGroups batch the evaluated and
	// the calibration sequences like groups.
	groups, parts, evalGroups, calGroups []*group
	// inseparable is why per-sequence gradients of a batch cannot be taken
	// in one pass (graph.ErrNotSeparable: an embedding looked up by codes),
	// or nil; the low-rank path needs them. It is only looked for when
	// Options.Solver is Auto or LowRank.
	inseparable error
	// poolNote says which pooling of residuals runs (resolvePooling).
	poolNote string
	// The solver chosen, why, and the prediction (chooseSolver).
	solver      Solver
	solverWhy   SolverReason
	solverCost  string
	solverSlack float64         // solvecost.Choice.Slack, for lowRankInfluence's retreat
	multi       *classify.Multi // a K-class classifier's audit (modelio.IO.Classes), or nil
	// pool, when not nil, lends the States of the trained model's
	// forward passes and of the training objective's gradient from one
	// phase to the next (statePool); nil: each pass makes its own.
	pool *statePool
}

// group is a set of sequences of equal length evaluated as one batch.
type group struct {
	T      int
	seqs   []int // indices into the dataset
	prog   *graph.Program
	in     []*graph.Tensor
	target []float64 // in output layout; 0 where there is no target
	weight []float64 // 1 where a loss term exists, else 0
	label  []int32   // a K-class model's labels by position (-1: none), else nil
}

// wholeBatch is the most sequences per batch of the training objective
// and of the evaluated sets: one batch of every sequence of a length made
// every curvature product one huge program (10,000 LSTM sequences: 3.25 GB
// peak per product, against 335 MB and half the time in batches of 500).
// The training and evaluation groups share it, so that in a self-audit a
// point's in-sample residual and its |y - prediction| come from the same
// batches and are the same float.
const wholeBatch = 512

// validate checks the inputs of Run and applies the defaults; it returns
// the options and the model restricted to Options.Params.
func validate(model *graph.Graph, train, test *blocks.Dataset, opt *Options) (Options, *graph.Graph, error) {
	if opt == nil {
		opt = &Options{}
	}
	o, err := opt.withDefaults()
	if err != nil {
		return o, nil, err
	}
	if train == nil || train.Len() == 0 {
		return o, nil, errors.New("audit: no training sequences")
	}
	if !train.Labelled() {
		return o, nil, fmt.Errorf("audit: the training data %s has no target column", train.File)
	}
	if len(train.Targets) != 1 {
		return o, nil, fmt.Errorf("audit: %d target columns (%v): one target column is supported", len(train.Targets), train.Targets)
	}
	if test != nil {
		if err := blocks.CheckCompatible(train, test); err != nil {
			return o, nil, err
		}
	}
	if o.Calibration != nil {
		if err := datacheck.Calibration(train, test, o.Calibration, o.Window > 0); err != nil {
			return o, nil, err
		}
	}
	g := model
	if o.Params != "" {
		keep, err := graph.ParamPattern(o.Params)
		if err != nil {
			return o, nil, err
		}
		if g, err = g.Restrict(keep); err != nil {
			return o, nil, errs.Fix([]Option{OptParams}, "audit: parameter pattern %q: %w", o.Params, err)
		}
	}
	if o.Classify != nil && o.Classify.Logits {
		g, err = classify.WithSigmoid(g)
	}
	if o.TargetScale != nil && (o.Loss != hvp.SquaredError || o.Classify != nil) {
		return o, nil, errors.New("audit: a target scale goes with the squared error of a forecast, not with a classifier's loss")
	}
	o.Ridge *= o.targetVar()
	return o, g, err
}

// prepare is the first phase: it reads the model's inputs and outputs,
// builds the block scheme and batches the training, evaluated and
// calibration sequences. test nil is a self-audit.
func prepare(o Options, g *graph.Graph, train, test *blocks.Dataset) (*problem, error) {
	p := &problem{opt: o, g: g, train: train, eval: test, cal: o.Calibration, theta: g.Theta(), workers: o.Workers, pool: &statePool{}}
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	if test == nil {
		p.eval, p.self = train, true
	} else if !o.Restart {
		p.eval = blocks.ContinueOrSelf(train, test)
	}
	if o.Window > 0 && p.cal != nil && !o.Restart {
		var ev *blocks.Dataset
		if p.cal, ev = blocks.ContinueThrough(train, p.cal, test); test != nil {
			p.eval = ev
		}
	}
	if n, ok := modelio.FeatureCount(g, o.Inputs); ok {
		if err := train.CheckFeatures(n); err != nil {
			return nil, err
		}
	}
	var err error
	if p.io, err = modelio.New(g, ioConfig(&o), train.Features); err != nil {
		return nil, err
	}
	if p.multi, err = o.Classify.Multi(p.io.Classes()); err == nil && p.multi != nil && (o.Window > 0 || o.Solver == LowRank) {
		err = errs.Fix([]Option{OptSolver, OptWindow}, "audit: a classifier of %d classes is audited without --window and with the exact or cg solver", p.multi.K)
	}
	if err != nil {
		return nil, err
	}
	if o.Window > 0 {
		err = p.windows()
		train = p.train
	} else if err = p.io.CheckLengths(train, p.evalOrNil(), o.Calibration); err == nil {
		p.scheme, err = blocks.NewScheme(train, o.Blocks, o.BlockLength)
	}
	if err != nil {
		return nil, err
	}
	for _, d := range []*blocks.Dataset{train, p.evalOrNil(), p.cal} {
		if err := datacheck.Unmatched(d, p.io.ForecastRows); err != nil {
			return nil, err
		}
	}
	if err := datacheck.Degenerate(p.scheme, train); err != nil {
		return nil, err
	}
	if len(p.scheme.Blocks) < 2 {
		return nil, fmt.Errorf("audit: only %d block(s) with targets: jackknife+ needs several training sequences", len(p.scheme.Blocks))
	}
	p.opt.Pooling, p.opt.Warmup, p.poolNote = resolvePooling(&p.opt, p.scheme, train)
	if p.groups, err = p.makeGroups(train, wholeBatch); err != nil {
		return nil, err
	}
	// Only the low-rank solver, chosen or automatic, depends on whether
	// the batches separate (the analysis of a batch's program allocates
	// several times its buffers).
	if o.Solver == Auto || o.Solver == LowRank {
		if err := p.checkSeparable(); err != nil {
			return nil, err
		}
	}
	if p.solver, p.solverWhy, p.solverCost, p.solverSlack = p.chooseSolver(); p.solverCost != "" && o.Progress != nil {
		o.Progress(Progress{Phase: "prepare", Note: "solver: " + p.solverCost})
	}
	// The LowRank solver streams batches and never reads parts: one
	// group per sequence was 0.6 GB at a million sequences.
	if solver, _ := p.solverName(); solver != LowRank {
		if p.parts, err = p.makeGroups(train, 1); err != nil {
			return nil, err
		}
	}
	if p.evalGroups, err = p.makeGroups(p.eval, wholeBatch); err != nil {
		return nil, err
	}
	if p.cal != nil {
		if p.calGroups, err = p.makeGroups(p.cal, wholeBatch); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// describe is the result's description of the model and of the setting
// before the influence phase adds what it decided (estimator, damping).
func (p *problem) describe() (ModelInfo, Setting) {
	m, s := p.describeFit()
	describeEval(&s, p.eval, p.self)
	return m, s
}

// describeFit is describe without what the evaluated set adds
// (describeEval): what a fit knows.
func (p *problem) describeFit() (ModelInfo, Setting) {
	o := &p.opt
	m := ModelInfo{Path: o.ModelPath, Opset: p.g.Opset, Layout: o.Layout.String(), Features: p.io.Features(),
		Horizons: p.io.Horizons(), ManyToOne: !p.io.PerStep(), Params: p.g.NumParams(), Inputs: p.io.Describe(), Output: p.io.OutputName(), Assumed: p.io.Notes()}
	for _, prm := range p.g.Params() {
		m.ParamNames = append(m.ParamNames, prm.Name)
	}
	solver, why := p.solverName()
	s := Setting{
		Alpha: o.Alpha, Blocks: p.scheme.Kind.String(), NumBlocks: len(p.scheme.Blocks),
		Solver: string(solver), SolverReason: string(why), SolverPrediction: p.solverCost, LossTerms: p.terms(), Estimator: string(o.Estimator), Curvature: o.Curvature.String(), Damping: o.Damping,
		Loss: o.Loss.String(), Seed: o.Seed, Ridge: o.Ridge / o.targetVar(),
		TrainFile: p.train.File, TrainSeqs: p.train.Len(),
		Notes: append(slices.Clip(p.io.Notes()), p.scheme.Notes...), Low: o.Low, High: o.High,
		NominalCover: 1 - o.Alpha, GuaranteedMin: 1 - 2*o.Alpha,
	}
	if o.Damping == 0 {
		s.Damping = hvp.DefaultDampingFor(o.Curvature, math.Inf(1))
	}
	if p.scheme.Kind != blocks.Sequences {
		s.BlockLength = p.scheme.K
	}
	if p.scheme.Kind == blocks.Windows {
		s.Windows = strings.Join(p.scheme.Notes, " ")
	}
	s.Pooling, s.Warmup = string(o.Pooling), o.Warmup
	if p.poolNote != "" {
		s.Notes = append(s.Notes, p.poolNote)
	}
	return m, s
}

// describeEval adds to s what the evaluated set eval decides: its file
// and size, or the note of a self-audit.
func describeEval(s *Setting, eval *blocks.Dataset, self bool) {
	s.TestSeqs = eval.Len()
	if note := datacheck.ContinuedNote(eval); note != "" && !self {
		s.Notes = append(s.Notes, note)
	}
	if !self {
		s.TestFile = eval.File
	} else {
		s.Notes = append(s.Notes, "No test data: each training sequence's intervals are built from the other blocks (leave one sequence out); coverage describes the training set.")
	}
}

// solverName is the solver the influence phase uses and why
// (chooseSolver).
func (p *problem) solverName() (Solver, SolverReason) { return p.solver, p.solverWhy }

// chooseSolver is the solver named, or Auto's choice (the rule of
// Solver's doc comment) and why, with the cost model's prediction when it
// mattered (audit/solvecost: a solver predicted much faster than the
// rule's replaces it).
func (p *problem) chooseSolver() (Solver, SolverReason, string, float64) {
	if p.opt.Solver != Auto {
		return p.opt.Solver, ReasonChosen, "", 0
	}
	P, gn := p.g.NumParams(), p.opt.Curvature == hvp.GaussNewton
	gn = gn && !p.opt.Loss.Grouped() // the dual and low-rank paths take losses of single elements
	dual, _ := hvp.DualFits(p.terms(), P, 0)
	low := p.scheme.Kind == blocks.Sequences && p.inseparable == nil
	rule, why := CG, ReasonLargeModel
	switch {
	case gn && dual:
		rule, why = Dual, ReasonFewerTerms
	case P <= AutoExactMax:
		rule, why = Exact, ReasonSmallModel
	case gn && low:
		rule, why = LowRank, ReasonLargeModel
	}
	sh := solvecost.ShapeOf(P, p.terms(), len(p.scheme.Blocks), solvecost.Rank(P, p.opt.Rank), curvatureMaxSeqs, p.train, p.eval, p.cal)
	if p.opt.DampingSensitivity {
		sh.CheckMaxDim, sh.CheckSeqs = sensitivityMaxDim, sensitivitySample
	}
	c := solvecost.Choose(sh, solvecost.Solver(rule), solvecost.Eligible(gn && dual, gn && low && p.opt.Retrain == 0))
	if c.Changed {
		return Solver(c.Solver), ReasonPredicted, c.Say, c.Slack
	}
	return rule, why, c.Say, 0
}

// terms is N, the number of the training data's loss terms (a K-class
// term is K weighted outputs).
func (p *problem) terms() int { return p.objective(p.groups).NumTerms() / max(1, p.io.Classes()) }

func (p *problem) level() level { return level{alpha: p.opt.Alpha, low: p.opt.Low, high: p.opt.High} }

// makeGroups batches the sequences of d by length, at most maxBatch per
// batch (no limit when 0; 1 gives one part per sequence), with targets and
// weights in the model's output layout.
func (p *problem) makeGroups(d *blocks.Dataset, maxBatch int) ([]*group, error) {
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
		gr, err := p.newGroup(d, T, idx)
		if err != nil {
			return err
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

// newGroup batches the sequences idx of d, all of length T.
func (p *problem) newGroup(d *blocks.Dataset, T int, idx []int) (*group, error) {
	seqs := make([]*blocks.Sequence, len(idx))
	for k, i := range idx {
		seqs[k] = d.Seqs[i]
	}
	prog, in, err := p.io.Program(len(idx), T, seqs)
	if err != nil {
		return nil, err
	}
	B := len(idx)
	n := p.io.OutLen(B, T)
	gr := &group{T: T, seqs: idx, prog: prog, in: in, target: make([]float64, n), weight: make([]float64, n)}
	gr.label = p.multi.Labels(n)
	fs := p.io.Forecasts(T)
	for b, s := range seqs {
		for _, f := range fs {
			row := f.T + f.H
			if row < T && s.Y != nil && s.Y[row] != nil {
				q := p.io.Index(B, T, b, f.T, f.H)
				if p.multi != nil {
					if err := p.multi.Targets(s.Y[row][0], gr.target[q:], gr.weight[q:], &gr.label[q]); err != nil {
						return nil, fmt.Errorf("audit: %s: sequence %s, step %d: %w", d.File, s.ID, row+1, err)
					}
					continue
				}
				gr.target[q] = s.Y[row][0]
				gr.weight[q] = p.opt.Classify.Weight(gr.target[q])
			}
		}
	}
	return gr, nil
}

// chunkGroup batches the sequences idx of d (a chunk of an executor's
// stage: of equal length, as makeGroups batched them on the driver).
func (p *problem) chunkGroup(d *blocks.Dataset, idx []int) (*group, error) {
	if len(idx) == 0 {
		return nil, fmt.Errorf("audit: a chunk of no sequences")
	}
	T := d.Seqs[idx[0]].Len()
	for _, i := range idx {
		if d.Seqs[i].Len() != T {
			return nil, fmt.Errorf("audit: a chunk of sequences of lengths %d and %d: the driver and the worker do not read the same data %s", T, d.Seqs[i].Len(), d.File)
		}
	}
	return p.newGroup(d, T, idx)
}

// objective makes an hvp objective over groups.
func (p *problem) objective(groups []*group) *hvp.Objective {
	o := &hvp.Objective{Loss: p.opt.Loss, Workers: p.workers, Ridge: p.opt.Ridge}
	for _, gr := range groups {
		o.Batches = append(o.Batches, hvp.Batch{Program: gr.prog, Inputs: gr.in, Target: gr.target, Weight: gr.weight})
	}
	return o
}

// maskRows returns a weight vector of group gr keeping only the terms
// whose target row is in [lo, hi).
func (p *problem) maskRows(gr *group, lo, hi int) []float64 {
	w := make([]float64, len(gr.weight))
	B := len(gr.seqs)
	fs := p.io.Forecasts(gr.T)
	for b := 0; b < B; b++ {
		for _, f := range fs {
			if row := f.T + f.H; row >= lo && row < hi {
				q := p.io.Index(B, gr.T, b, f.T, f.H)
				copy(w[q:q+max(1, p.io.Classes())], gr.weight[q:])
			}
		}
	}
	return w
}

// evaluate runs the trained model on the evaluated and calibration
// sequences and lists their forecasts.
func evaluate(ctx context.Context, p *problem) (*evaluation, error) {
	test, err := p.pointsOf(ctx, p.eval, p.evalGroups)
	if err != nil {
		return nil, err
	}
	ev := &evaluation{test: test}
	if p.cal != nil {
		if ev.cal, err = p.pointsOf(ctx, p.cal, p.calGroups); err != nil {
			return nil, err
		}
	}
	p.keepTrainingStates()
	return ev, nil
}

// keepTrainingStates keeps in p's pool only the States that the
// influence phase runs again: those of the training batches' programs.
func (p *problem) keepTrainingStates() {
	if p.pool != nil {
		p.pool.keep(p.groups)
	}
}

// pointsOf evaluates the trained model on the groups of dataset d and
// lists their forecasts (pointsAt).
func (p *problem) pointsOf(ctx context.Context, d *blocks.Dataset, groups []*group) ([]point, error) {
	fx, err := p.outputs(ctx, groups)
	if err != nil {
		return nil, err
	}
	n := 0
	p.eachPoint(d, groups, fx, func(point) { n++ })
	points := make([]point, 0, n)
	p.eachPoint(d, groups, fx, func(pt point) { points = append(points, pt) })
	return points, nil
}

// eachPoint calls yield on every forecast of the sequences of dataset d
// batched in groups (each sequence in at most one group), with fx[gi] the
// outputs of groups[gi] (problem.outputs): by sequence, then row, then
// horizon (the order of modelio.IO.Forecasts). Rows before a sequence's
// context are skipped (training rows that set the state).
func (p *problem) eachPoint(d *blocks.Dataset, groups []*group, fx [][]float64, yield func(point)) {
	// where[i] is sequence i's group and place in it, or -1.
	where := make([][2]int32, len(d.Seqs))
	for i := range where {
		where[i] = [2]int32{-1, -1}
	}
	for gi, gr := range groups {
		for b, i := range gr.seqs {
			where[i] = [2]int32{int32(gi), int32(b)}
		}
	}
	var fs []forecast
	lastT := -1
	for i, seq := range d.Seqs {
		gi, b := int(where[i][0]), int(where[i][1])
		if gi < 0 {
			continue
		}
		gr := groups[gi]
		if gr.T != lastT {
			fs, lastT = p.io.Forecasts(gr.T), gr.T
		}
		B := len(gr.seqs)
		for _, f := range fs {
			if f.T+f.H < seq.Context {
				continue // a training row that sets the state
			}
			q := p.io.Index(B, gr.T, b, f.T, f.H)
			y, v := p.at(gr, fx[gi], q) // y is 1 for a K-class model
			pt := point{seq: i, f: f, group: gi, pos: q, pred: v}
			if row := f.T + f.H; row < gr.T && seq.Y != nil && seq.Y[row] != nil {
				if pt.y, pt.has = y, true; p.multi == nil {
					pt.y = seq.Y[row][0] // the data's (a shifted alternative's, fitcheck.go)
				}
			}
			yield(pt)
		}
	}
}

// at is the target and forecast the interval arithmetic reads at position
// q of group gr's output out (a K-class model's: classify.Multi.At).
func (p *problem) at(gr *group, out []float64, q int) (y, f float64) {
	if p.multi == nil {
		return gr.target[q], out[q]
	}
	return p.multi.At(out[q:], int(gr.label[q]))
}

// checkSeparable records whether the model's per-sequence gradients come
// from one pass over a batch (graph.Program.PerExample), which the low-rank
// path needs: an embedding table looked up by category codes is not
// separated today. It refuses Solver LowRank for such a model; Auto then
// does not choose it (solverName).
func (p *problem) checkSeparable() error {
	if len(p.groups) == 0 {
		return nil
	}
	_, err := p.groups[0].prog.PerExample(p.io.ExampleAxes())
	if !errors.Is(err, graph.ErrNotSeparable) {
		return nil
	}
	p.inseparable = err
	if p.opt.Solver == LowRank {
		return errs.Fix([]Option{OptSolver}, "audit: the low-rank solver needs per-sequence gradients in one pass over a batch, which this model does not give (%v): choose the exact, dual or cg solver", err)
	}
	return nil
}
