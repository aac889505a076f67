package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// influence is the influence phase's output: the estimated
// leave-one-block-out models and what the later phases need of them.
// estimate fills it from one factorisation of the curvature (exact or
// iterative solves) and the Newton correction; a scalable path (low-rank
// curvature, streaming) fills the same fields, and may leave delta nil
// when it gives the perturbed predictions directly (perturbed).
type influence struct {
	// delta[b] = theta_-b - theta_hat for every block b.
	delta [][]float64
	// own[b], when own and own[b] are non-nil, are block b's own
	// leave-out residuals from the linearised model (the Newton
	// estimator's leverage correction); the residual phase takes the
	// other blocks' from forward passes at theta_hat + delta[b].
	own []*ownBlock
	// lev[b] and levMax[b] are the leverage of block b's own terms (the
	// diagonal of S) and S's largest eigenvalue (Newton estimator).
	lev    [][]float64
	levMax []float64
	// estimator is the estimator used (Newton falls back to the
	// infinitesimal one, saying why in notes); damping is the relative
	// damping rho used.
	estimator Estimator
	damping   float64
	notes     []string
	// diag holds the diagnostics this phase measures (stationarity,
	// solver report, leverage, unbounded blocks, influence norms).
	diag     Diagnostics
	warnings []Warning
	// rep is how the residual and limits phases read the estimated
	// models.
	rep influenceRep
	// redamp, when not nil, is the same influence phase at relative
	// damping rho for the problem q (p with that damping), from this
	// phase's block gradients and factorisation (hvp.Factorization.Redamp):
	// what the damping sensitivity re-runs. It is set only when
	// Options.DampingSensitivity asks for it and the solver can re-damp
	// (exact, dual), since it keeps the factorisation alive.
	redamp func(ctx context.Context, q *problem, rho float64) (*influence, error)
	// fx are the model's outputs on the training batches, when the
	// phase computed them (the LowRank solver's terms; the dense solvers
	// before their curvature), for the checks after it; fit reads and
	// then drops them.
	fx trainOutputs
	// total is the gradient of the training objective over p.groups at
	// theta_hat (hvp.Objective.Gradient), when the phase formed it (the
	// dense solvers), which the fit check reads instead of forming it
	// again: the same floats, without a second pass and its buffers.
	total []float64
}

// influenceRep is how the phases after the influence phase read the
// leave-one-block-out models, whatever form the solver kept them in:
// dense steps in parameter space (stepsRep: the exact, dual, CG and
// LiSSA solvers) or coordinates in a low-rank factor's basis with the
// own residuals, Newton-refined or not (tableRep: the LowRank solver).
// Each phase exists once; a representation supplies only what depends
// on its form.
type influenceRep interface {
	// residuals is the residual phase: the leave-one-block-out residuals
	// (entries, which a representation that keeps them in its own form
	// may leave nil) and every block's mean own prediction shift; mark is
	// called if it begins a phase.
	residuals(ctx context.Context, p *problem, mark func(string)) (*looResiduals, error)
	// limits is the limits phase of the evaluation points ev.test (cal
	// false; with the calibration curve of the labelled ones) or ev.cal
	// (cal true; no curve): their jackknife+ limits at p's alpha, a
	// self-audit leaving out each point's own sequence. It follows
	// residuals.
	limits(ctx context.Context, p *problem, ev *evaluation, cal bool) (limits, []interval.CalibrationPoint, error)
}

// estimate is the influence phase: from the block gradients it factorises
// the damped curvature, solves for the infinitesimal steps
// (C + lambda I)^-1 grad L_b (docs/design.md, section 4.1: the leave-one-out
// sign), and with the Newton estimator turns them into Newton steps on the
// leave-block-out objective. sg gives the output Jacobians of the Newton
// correction; mark is called as its sub-phases begin.
func estimate(ctx context.Context, p *problem, grads [][]float64, sg *seqGrads, mark func(phase string)) (*influence, error) {
	name, _ := p.solverName()
	s, err := solverFor(name)
	if err != nil {
		return nil, err
	}
	ds, ok := s.(denseSolver)
	if !ok {
		return nil, fmt.Errorf("audit: the %s solver keeps no steps in parameter space", name)
	}
	return estimateWith(ctx, p, ds.method, nil, grads, sg, mark)
}

// estimateWith is estimate with the hvp method named; tp are the
// training batches' passes when the caller ran them (nil: estimateWith
// runs them).
func estimateWith(ctx context.Context, p *problem, method hvp.Method, tp *trainingPass, grads [][]float64, sg *seqGrads, mark func(phase string)) (*influence, error) {
	inf := &influence{estimator: p.opt.Estimator}
	d := &inf.diag
	if tp == nil {
		var err error
		if tp, err = trainingPasses(ctx, p); err != nil {
			return nil, err
		}
	}
	inf.fx, inf.total = tp.fx, tp.total
	total, whole := tp.total, tp.whole
	if whole == nil {
		whole = p.objective(p.groups)
	}
	gnorm := make([]float64, len(grads))
	for k, g := range grads {
		gnorm[k] = num.Norm(g)
	}
	inf.stationarity(total, gnorm)
	opts := &hvp.Options{Method: method, Curvature: p.opt.Curvature, Damping: dampingFor(&p.opt, d.Stationarity), Seed: p.opt.Seed,
		Progress: func(done, total int) { p.opt.progress("curvature and solve", done, total) }}
	obj := whole
	switch method {
	case hvp.Exact:
		// The dense curvature takes one tangent and one second-order
		// pass per parameter: over smaller batches their buffers stay in
		// cache (denseBatch).
		gs, err := p.makeGroups(p.train, denseBatch)
		if err != nil {
			return nil, err
		}
		obj = p.objective(gs)
	case hvp.LiSSA:
		obj = p.objective(p.parts)
		opts.Sample = lissaSampler(p)
	case hvp.Dual:
		// The Jacobian rows then come from one batched pass per term
		// position instead of one pass per term.
		for c := range obj.Batches {
			obj.Batches[c].ExampleAxes = p.io.ExampleAxes()
		}
	}
	f, rep, err := hvp.Factorize(ctx, obj, p.theta, opts)
	if err != nil {
		return nil, err
	}
	if err := inf.solve(ctx, p, f, rep, grads, sg, mark); err != nil {
		return nil, err
	}
	if p.opt.DampingSensitivity && (method == hvp.Exact || method == hvp.Dual) {
		// The damping sensitivity re-solves at other dampings from this
		// factorisation (damping.go).
		inf.redamp = func(ctx context.Context, q *problem, rho float64) (*influence, error) {
			g, rep, err := f.Redamp(ctx, rho)
			if err != nil {
				return nil, err
			}
			re := &influence{estimator: q.opt.Estimator}
			re.diag.GradNorm, re.diag.BlockGradMedian, re.diag.Stationarity = d.GradNorm, d.BlockGradMedian, d.Stationarity
			if err := re.solve(ctx, q, g, rep, grads, sg, func(string) {}); err != nil {
				return nil, err
			}
			return re, nil
		}
	}
	return inf, nil
}

// solve is the influence phase after the factorisation f of the damped
// curvature (its report rep): the infinitesimal steps of the block
// gradients grads, the solver's diagnostics and warnings, and with the
// Newton estimator the Newton correction (sg gives the output
// Jacobians).
func (inf *influence) solve(ctx context.Context, p *problem, f *hvp.Factorization, rep *hvp.Report, grads [][]float64, sg *seqGrads, mark func(string)) error {
	d := &inf.diag
	x := make([][]float64, len(grads))
	if err := f.SolveRecorded(ctx, x, grads); err != nil {
		return err
	}
	inf.delta = x
	inf.curvature(rep.Lambda, rep.Trace, rep.MinEig, rep.MaxEig)
	d.NegativeEigenvalues = rep.NegativeEigs
	inf.damping = rep.Rho
	for k := range rep.Iterations {
		d.Iterations = max(d.Iterations, rep.Iterations[k])
		d.MaxResidual = math.Max(d.MaxResidual, rep.Residuals[k])
	}
	if rep.NegativeEigs > 0 {
		inf.warn(Warning{Code: Indefinite, Step: -1, Figure: rep.MinEig, Bound: -rep.Lambda, Count: rep.NegativeEigs})
	}
	if rep.Unconverged > 0 {
		inf.warn(Warning{Code: SolverTolerance, Step: -1, Figure: d.MaxResidual, Bound: rep.Tol, Count: rep.Unconverged})
	}
	if p.opt.Estimator == Newton {
		if err := newtonCorrection(ctx, p, f, sg, inf, mark); err != nil {
			return err
		}
	}
	d.InfluenceNorms = make([]float64, len(inf.delta))
	for k, v := range inf.delta {
		d.InfluenceNorms[k] = num.Norm(v)
	}
	inf.rep = &stepsRep{inf: inf}
	return nil
}

func (inf *influence) warn(w Warning) { inf.warnings = append(inf.warnings, w) }

// stationarity records how far theta is from a stationary point of the
// training objective: the norm of its total gradient total, the median
// of the block gradients' norms gnorm, their ratio, and the warning when
// the ratio exceeds StationarityBound. Every solver's influence phase
// calls it.
func (inf *influence) stationarity(total, gnorm []float64) {
	d := &inf.diag
	d.GradNorm = num.Norm(total)
	d.BlockGradMedian = num.Median(gnorm)
	if d.BlockGradMedian > 0 {
		d.Stationarity = d.GradNorm / d.BlockGradMedian
	}
	if d.Stationarity > StationarityBound {
		inf.warn(Warning{Code: NotStationary, Step: -1, Figure: d.Stationarity, Bound: StationarityBound})
	}
}

// curvature records what the solver found of the curvature: the
// absolute damping lambda, the trace and the extreme eigenvalues (NaN
// where not known), and the warning when the trace is not positive.
func (inf *influence) curvature(lambda, trace, minEig, maxEig float64) {
	d := &inf.diag
	d.Lambda, d.Trace, d.MinEig, d.MaxEig = lambda, trace, minEig, maxEig
	if trace <= 0 {
		inf.warn(Warning{Code: NonPositiveTrace, Step: -1, Figure: trace})
	}
}

// lissaSampler draws, for LiSSA, training sequences (one part each) and
// with interval blocks truncates each to a prefix S_{1:Kj} of whole
// intervals, j drawn at random (blockwise batch sampling, docs/design.md,
// section 4.8); the scale n/size makes the sample's curvature an unbiased
// estimate of the whole one for sequence blocks.
func lissaSampler(p *problem) func(rnd *rand.Rand, size int) ([]hvp.Job, float64) {
	n := len(p.parts)
	K := p.scheme.K
	return func(rnd *rand.Rand, size int) ([]hvp.Job, float64) {
		jobs := make([]hvp.Job, size)
		for k := range jobs {
			i := rnd.IntN(n)
			jobs[k] = hvp.Job{Batch: i}
			if (p.scheme.Kind == blocks.Intervals || p.scheme.Kind == blocks.Nested) && K > 0 {
				gr := p.parts[i]
				J := (gr.T + K - 1) / K
				jobs[k].Weight = p.maskRows(gr, 0, K*(1+rnd.IntN(J)))
			}
		}
		return jobs, float64(n) / float64(size)
	}
}

// denseBatch is the most sequences per batch of the exact solver's dense
// curvature. Its P tangent and second-order passes each touch every
// buffer of a batch's program; in batches of 100 sequences of the
// paper's RNN (10 steps, 20 units) they fit in the core's cache, and the
// Hessian takes about a tenth less CPU than in the training objective's
// batches of 500 (BenchmarkDenseHessianPaperChunked). Smaller batches
// cost more in per-pass overhead than they save.
const denseBatch = 100

// trainingPass is what the influence phase of a dense solver reads of the
// trained model on the training batches (p.groups): its outputs there,
// which the checks after the phase read (fit), and the training
// objective's gradient at theta_hat, with the objective that formed it
// (whole; nil when the caller dropped it).
type trainingPass struct {
	fx    trainOutputs
	total []float64
	whole *hvp.Objective
}

// trainingPasses runs the training batches forward and backward, on the
// States the evaluated batches left in p's pool, which it then releases
// (the objective keeps its own while a solver uses it).
func trainingPasses(ctx context.Context, p *problem) (*trainingPass, error) {
	fx, err := p.trainOutputs(ctx)
	if err != nil {
		return nil, err
	}
	whole := p.objective(p.groups)
	if p.pool != nil {
		whole.States = p.pool
		defer p.pool.release()
	}
	total := make([]float64, len(p.theta))
	if _, err := whole.Gradient(ctx, p.theta, total); err != nil {
		return nil, err
	}
	return &trainingPass{fx: fx, total: total, whole: whole}, nil
}
