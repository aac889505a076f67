package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/audit/solvecost"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/words"
)

// Run audits a trained model: from the training data it estimates every
// leave-one-block-out model by influence, collects the leave-one-block-out
// residuals, and gives every forecast of the test sequences a jackknife+
// interval (docs/design.md, sections 3 to 5 and 8). Without test data (test
// nil) it audits the training set itself, leaving one sequence out. The model
// is not modified.
func Run(ctx context.Context, model *graph.Graph, train, test *blocks.Dataset, opt *Options) (res *Result, err error) {
	defer func() {
		if err != nil {
			res = nil
		}
	}()
	defer catchInternal(&err)
	o, g, err := validate(model, train, test, opt)
	if err != nil {
		return nil, err
	}
	clock := o.clock()

	clock.Begin("prepare")
	p, err := prepare(o, g, train, test)
	if err != nil {
		return nil, err
	}
	ev, err := evaluate(ctx, p)
	if err != nil {
		return nil, err
	}
	f, err := fit(ctx, p, ev, clock.Begin)
	if err != nil {
		return nil, err
	}
	if res, err = f.predict(ctx, p, ev, f.inf.rep, clock.Begin); err != nil {
		return nil, err
	}
	warns := res.Diag.Warnings
	if o.Retrain != 0 {
		clock.Begin("exact re-training")
		rr, w, err := retrain(ctx, p, ev, f.inf, f.loo)
		if err != nil {
			return nil, err
		}
		res.Retrain = rr
		warns = append(warns, w...)
	}
	res.Diag.Warnings = warns
	if err := assess(ctx, p, ev, res, f.inf, clock.Begin); err != nil {
		return nil, err
	}
	res.Diag.Phases = clock.End()
	if err := ctx.Err(); err != nil {
		// Some parallel loops stop early without an error of their own.
		return nil, err
	}
	return res, nil
}

// Fitted is the part of an audit that depends only on the trained model,
// its training data and the calibration set: the estimated
// leave-one-block-out models, their residuals by forecast, the in-sample
// residuals and the calibration set's jackknife+ limits. Fit computes it
// once; Predict gives the forecasts of any number of new sequences their
// intervals from it without recomputing curvature or block gradients.
// Run is Fit followed by Predict on the test data.
type Fitted struct {
	opt   Options      // after defaults
	g     *graph.Graph // the model, restricted to Options.Params
	io    *modelio.IO
	theta []float64
	// train describes the training data: its file, feature and target
	// columns and shift (the sequences themselves only in process).
	train *blocks.Dataset
	// model and setting describe the fit; setting lacks what the
	// evaluated set adds (describeEval) and what the influence phase
	// decided (inf).
	model       ModelInfo
	setting     Setting
	inf         *influence
	loo         *looResiduals
	naive       map[forecast][]float64
	influential []InfluenceEntry
	cal         *calFit
	// calData is the calibration set in process (nil after Load), which
	// Predict checks the test data against.
	calData *blocks.Dataset
	// Phases are the fit's phases and their wall times.
	Phases []Phase
}

// calFit is the calibration set as a fit keeps it: its file, its number
// of sequences, its points (forecast, prediction, target) and their
// jackknife+ limits, from which calibrate computes the calibration scores.
type calFit struct {
	file   string
	seqs   int
	points []point
	lim    limits
}

// Fit is the part of Run that does not depend on the test data: from the
// training data (and Options.Calibration) it estimates every
// leave-one-block-out model by influence and collects what intervals for
// new sequences need. Exact re-training (Options.Retrain) compares
// intervals on the test points and is only available through Run.
func Fit(ctx context.Context, model *graph.Graph, train *blocks.Dataset, opt *Options) (f *Fitted, err error) {
	defer func() {
		if err != nil {
			f = nil
		}
	}()
	defer catchInternal(&err)
	// The calibration set is checked against the training data here and
	// against the test data by Predict.
	var noCal Options
	if opt != nil {
		noCal = *opt
	}
	cal := noCal.Calibration
	noCal.Calibration = nil
	o, g, err := validate(model, train, nil, &noCal)
	if err != nil {
		return nil, err
	}
	if cal != nil {
		if err := datacheck.CalibrationTrain(train, cal, noCal.Window > 0); err != nil {
			return nil, err
		}
		o.Calibration = cal
	}
	if o.Retrain != 0 {
		return nil, errors.New("audit: exact re-training compares intervals on the test data: run a full audit to re-train")
	}
	clock := o.clock()
	clock.Begin("prepare")
	p, err := prepare(o, g, train, nil)
	if err != nil {
		return nil, err
	}
	ev := &evaluation{}
	if p.cal != nil {
		if ev.cal, err = p.pointsOf(ctx, p.cal, p.calGroups); err != nil {
			return nil, err
		}
		p.keepTrainingStates()
	}
	f, err = fit(ctx, p, ev, clock.Begin)
	if err != nil {
		return nil, err
	}
	f.Phases = clock.End()
	return f, nil
}

// fit runs the phases of an audit that depend only on the training and
// calibration data: the influence phase, the leave-one-block-out and
// in-sample residuals and the calibration points' jackknife+ limits.
// ev.cal are the calibration points; the LowRank solver's influence phase
// also maps ev.test. mark is called as phases begin.
func fit(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*Fitted, error) {
	name, _ := p.solverName()
	s, err := solverFor(name)
	if err != nil {
		return nil, err
	}
	if p.opt.Retrain != 0 && !s.retrains() {
		return nil, errNoRetrain()
	}
	var prox *refit.Proximal
	if p.opt.TrainBudget != nil {
		mark("early-stopping damping") // the infinitesimal estimator at the budget's damping
		if prox, err = p.proximalProblem().Damping(ctx); err != nil {
			return nil, err
		}
		p.opt.Damping, p.opt.Estimator = prox.Rho, Infinitesimal
	}
	inf, err := s.influence(ctx, p, ev, mark)
	var back solvecost.Retreated // lowRankInfluence: back to the exact path
	if errors.As(err, &back) {
		p.solver, p.solverWhy, p.solverCost, p.solverSlack, s = Exact, ReasonSmallModel, p.solverCost+string(back), 0, denseSolver{hvp.Exact}
		inf, err = s.influence(ctx, p, ev, mark)
	}
	if err != nil {
		return nil, err
	}
	inf.diag.EarlyStop = prox
	loo, err := inf.rep.residuals(ctx, p, mark)
	if err != nil {
		return nil, err
	}
	// The in-sample residuals and the scheme advice read the model's
	// outputs on the training batches, computed once.
	fx := inf.fx
	inf.fx = nil
	if fx == nil {
		if fx, err = p.trainOutputs(ctx); err != nil {
			return nil, err
		}
	}
	naive := inSampleResiduals(p, fx)
	total := inf.total
	inf.total = nil
	if inf.diag.Fit, err = fitCheck(ctx, p, total, fx); err != nil {
		return nil, err
	}
	if inf.diag.Scheme, err = adviseScheme(ctx, p, fx); err != nil {
		return nil, err
	}
	if p.pool != nil {
		p.pool.release() // the limits phase runs programs of its own
	}
	f := &Fitted{opt: p.opt, g: p.g, io: p.io, theta: p.theta, train: p.train, inf: inf, loo: loo, naive: naive,
		influential: mostInfluential(p.scheme, inf.diag.InfluenceNorms, loo.shift)}
	f.model, f.setting = p.describeFit()
	if p.cal != nil {
		mark("intervals")
		cl, _, err := inf.rep.limits(ctx, p, ev, true)
		if err != nil {
			return nil, err
		}
		f.cal = &calFit{file: p.cal.File, seqs: p.cal.Len(), points: ev.cal, lim: cl}
		f.calData = p.cal
	}
	return f, nil
}

// solver is one way of running the influence phase: what Options.Solver
// names. Each returns the estimated leave-one-block-out models in the
// representation it keeps them in (influence.rep); the phases after it
// are the same for every solver. Adding a solver is a type here (or its
// own file) and a row in solverTable.
type solver interface {
	// influence runs the influence phase on p for the evaluation points
	// ev, calling mark as its sub-phases begin.
	influence(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*influence, error)
	// retrains says whether exact re-training (Options.Retrain) can be
	// compared with its estimates: it needs the steps in parameter space.
	retrains() bool
}

// denseSolver estimates every block's step in parameter space from one
// hvp.Factorize of the damped curvature by method (the exact, dual, CG
// and LiSSA solvers): the block gradients, then estimate.
type denseSolver struct{ method hvp.Method }

func (s denseSolver) retrains() bool { return true }

func (s denseSolver) influence(ctx context.Context, p *problem, _ *evaluation, mark func(string)) (*influence, error) {
	mark("block gradients")
	var tp *trainingPass
	if s.method == hvp.Exact {
		// The exact solver's curvature runs batches of its own: the
		// training batches' passes run first, so that their buffers are
		// free again for the block gradients'.
		var err error
		if tp, err = trainingPasses(ctx, p); err != nil {
			return nil, err
		}
		tp.whole = nil
	}
	sg, err := newSeqGrads(p, false)
	if err != nil {
		return nil, err
	}
	grads, err := blockGradients(ctx, p, sg)
	if err != nil {
		return nil, err
	}
	if p.opt.Estimator != Newton {
		// Only the Newton correction takes gradients again: the
		// curvature need not share the heap with these buffers.
		sg.release()
	}
	mark("curvature and solve")
	return estimateWith(ctx, p, s.method, tp, grads, sg, mark)
}

// lowRankSolver is the streaming path (scalable.go): a low-rank factor
// of the Gauss-Newton matrix, every block's step kept as k coordinates
// in its basis.
type lowRankSolver struct{}

func (lowRankSolver) retrains() bool { return false }

func (lowRankSolver) influence(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*influence, error) {
	return lowRankInfluence(ctx, p, ev, mark)
}

// namedSolver is one row of the solver table.
type namedSolver struct {
	name Solver
	s    solver
}

// solverTable lists the solvers Options.Solver names, in the order a
// command offers them: adding a solver is a row here and its type.
func solverTable() []namedSolver {
	return []namedSolver{
		{Exact, denseSolver{hvp.Exact}},
		{Dual, denseSolver{hvp.Dual}},
		{LowRank, lowRankSolver{}},
		{CG, denseSolver{hvp.CG}},
		{LiSSA, denseSolver{hvp.LiSSA}},
	}
}

// Solvers returns the names Options.Solver takes, Auto first: what a
// command's solver flag offers.
func Solvers() []Solver {
	out := []Solver{Auto}
	for _, r := range solverTable() {
		out = append(out, r.name)
	}
	return out
}

// solverList words the names of Solvers for a message: "auto, exact,
// dual, lowrank, cg or lissa".
func solverList() string {
	var names []string
	for _, n := range Solvers() {
		names = append(names, string(n))
	}
	return words.Join(names, "or")
}

// solverFor returns the solver named (not Auto: see problem.solverName).
func solverFor(name Solver) (solver, error) {
	for _, r := range solverTable() {
		if r.name == name {
			return r.s, nil
		}
	}
	return nil, fmt.Errorf("audit: unknown solver %q (%s)", name, solverList())
}

// errNoRetrain is Run's error when exact re-training is asked of a solver
// that keeps no steps in parameter space.
func errNoRetrain() error {
	return errs.Fix([]Option{OptSolver, OptRetrain}, "audit: exact re-training compares per-block parameter steps, which the low-rank solver does not keep: choose the exact, dual or cg solver, or no re-training")
}

// chunkSize is the most sequences per batch for per-sequence gradients:
// enough batches to keep every core busy, each small enough to stay in
// cache.
const chunkSize = 256

// seqGrads computes per-training-sequence gradients: from batched passes
// over chunks of at most chunkSize sequences split by sequence
// (hvp.Objective.PerExampleGradients), or, for a model whose batch entries
// do not separate, from one backward pass per sequence. It keeps its
// objectives (their example analyses and evaluation buffers) and which
// path works across calls; the block-gradient and influence phases share
// one.
type seqGrads struct {
	p        *problem
	chunks   []*group // nil on the one-pass-per-sequence path
	chunkObj *hvp.Objective
	partObj  *hvp.Objective
	// separate: one pass per sequence (the batch entries do not separate,
	// found on the first call, or a test asks for it).
	separate bool
}

// newSeqGrads prepares per-sequence gradients of p's training sequences;
// separate asks for one pass per sequence from the start.
func newSeqGrads(p *problem, separate bool) (*seqGrads, error) {
	s := &seqGrads{p: p, separate: separate}
	if !separate {
		var err error
		if s.chunks, err = p.makeGroups(p.train, chunkSize); err != nil {
			return nil, err
		}
		s.chunkObj = s.chunkObjective()
	}
	return s, nil
}

// chunkObjective is the objective over the chunks, with their example
// axes.
func (s *seqGrads) chunkObjective() *hvp.Objective {
	o := s.p.objective(s.chunks)
	for c := range s.chunks {
		o.Batches[c].ExampleAxes = s.p.io.ExampleAxes()
	}
	return o
}

// release drops the evaluation buffers the objectives keep, so that the
// phases after the block gradients do not hold them; a later call of grads
// makes them again.
func (s *seqGrads) release() {
	if s.chunkObj != nil {
		s.chunkObj = s.chunkObjective()
	}
	s.partObj = nil
}

// rows returns, for every training sequence, the gradient of its loss
// terms whose target row is in [lo, hi).
func (s *seqGrads) rows(ctx context.Context, lo, hi int) ([][]float64, error) {
	return s.grads(ctx, func(gr *group) []float64 { return s.p.maskRows(gr, lo, hi) }, false)
}

// grads returns, for every training sequence, the gradient of its loss
// terms that mask keeps (mask gives a group's weights), or with outputs
// set the gradient of the kept outputs' weighted sum (hvp.Job.Outputs):
// rows of the output Jacobian when mask keeps one term per sequence.
func (s *seqGrads) grads(ctx context.Context, mask func(gr *group) []float64, outputs bool) ([][]float64, error) {
	p := s.p
	n := p.train.Len()
	out := make([][]float64, n)
	if !s.separate {
		jobs := make([]hvp.Job, len(s.chunks))
		res := make([][][]float64, len(s.chunks))
		for c, gr := range s.chunks {
			jobs[c] = hvp.Job{Batch: c, Weight: mask(gr), Outputs: outputs}
			res[c] = make([][]float64, len(gr.seqs))
		}
		err := s.chunkObj.PerExampleGradients(ctx, p.theta, jobs, res, nil)
		if err == nil {
			for c, gr := range s.chunks {
				for b, i := range gr.seqs {
					out[i] = res[c][b]
				}
			}
			return out, nil
		}
		if !errors.Is(err, graph.ErrNotSeparable) {
			return nil, err
		}
		s.separate = true
	}
	if s.partObj == nil {
		s.partObj = p.objective(p.parts)
	}
	jobs := make([]hvp.Job, len(p.parts))
	idx := make([]int, len(p.parts))
	for pi, gr := range p.parts {
		jobs[pi] = hvp.Job{Batch: pi, Weight: mask(gr), Outputs: outputs}
		idx[pi] = gr.seqs[0]
	}
	res := make([][]float64, len(jobs))
	if err := s.partObj.Gradients(ctx, p.theta, jobs, res, nil); err != nil {
		return nil, err
	}
	for pi, i := range idx {
		out[i] = res[pi]
	}
	return out, nil
}

// blockGradients is the block-gradient phase: grad L_b for every block of
// p's scheme (docs/design.md, section 2.2), from per-sequence gradients, and
// for interval and nested schemes from per (sequence, interval) cell
// gradients combined by addition.
func blockGradients(ctx context.Context, p *problem, sg *seqGrads) ([][]float64, error) {
	bl := p.scheme.Blocks
	out := make([][]float64, len(bl))
	if p.scheme.Kind == blocks.Sequences || p.scheme.Kind == blocks.Windows {
		seq, err := sg.rows(ctx, 0, math.MaxInt)
		if err != nil {
			return nil, err
		}
		for k, b := range bl {
			if b.Kind != blocks.Windows {
				out[k] = seq[b.Seq]
				continue
			}
			out[k] = make([]float64, len(p.theta))
			for _, g := range seq[b.DelLo:b.DelHi] {
				num.AddScaled(out[k], 1, g)
			}
		}
		return out, nil
	}
	// cells[j][i]: the gradient of sequence i's terms in interval j.
	P := len(p.theta)
	n := p.train.Len()
	var cells [][][]float64
	for _, b := range bl {
		if b.Interval < 0 {
			continue
		}
		for len(cells) <= b.Interval {
			cells = append(cells, nil)
		}
		if cells[b.Interval] == nil {
			c, err := sg.rows(ctx, b.Lo, b.Hi)
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
				num.AddScaled(s, 1, c[i])
			}
		}
		return s
	}
	intGrad := make([][]float64, len(cells))
	for j, c := range cells {
		intGrad[j] = make([]float64, P)
		for i := 0; i < n && c != nil; i++ {
			num.AddScaled(intGrad[j], 1, c[i])
		}
	}
	for k, b := range bl {
		switch b.Kind {
		case blocks.Intervals:
			out[k] = slices.Clone(intGrad[b.Interval])
		case blocks.Nested:
			g := seqGrad(b.Seq)
			num.AddScaled(g, 1, intGrad[b.Interval])
			num.AddScaled(g, -1, cells[b.Interval][b.Seq])
			out[k] = g
		default:
			out[k] = seqGrad(b.Seq)
		}
	}
	return out, nil
}
