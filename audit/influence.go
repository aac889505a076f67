package audit

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
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
}

// estimate is the influence phase: from the block gradients it factorises
// the damped curvature, solves for the infinitesimal steps
// (C + lambda I)^-1 grad L_b (DESIGN section 4: the leave-one-out sign),
// and with the Newton estimator turns them into Newton steps on the
// leave-block-out objective. sg gives the output Jacobians of the Newton
// correction; mark is called as its sub-phases begin.
func estimate(ctx context.Context, p *problem, grads [][]float64, sg *seqGrads, mark func(phase string)) (*influence, error) {
	inf := &influence{estimator: p.opt.Estimator}
	d := &inf.diag
	whole := p.objective(p.groups)
	if err := stationarity(ctx, whole, p.theta, grads, d); err != nil {
		return nil, err
	}
	if d.Stationarity > StationarityBound {
		inf.warn(Warning{Code: NotStationary, Step: -1, Figure: d.Stationarity, Bound: StationarityBound})
	}
	solver, _ := p.solverName()
	method := map[Solver]hvp.Method{Exact: hvp.Exact, CG: hvp.CG, LiSSA: hvp.LiSSA, Dual: hvp.Dual}[solver]
	opts := &hvp.Options{Method: method, Curvature: p.opt.Curvature, Damping: dampingFor(&p.opt, d.Stationarity), Seed: p.opt.Seed,
		Progress: func(done, total int) { p.opt.progress("curvature and solve", done, total) }}
	obj := whole
	switch method {
	case hvp.LiSSA:
		obj = p.objective(p.parts)
		opts.Sample = lissaSampler(p)
	case hvp.Dual:
		// The Jacobian rows then come from one batched pass per term
		// position instead of one pass per term.
		for c := range obj.Batches {
			obj.Batches[c].ExampleAxes = p.io.exampleAxes()
		}
	}
	f, rep, err := hvp.Factorize(ctx, obj, p.theta, opts)
	if err != nil {
		return nil, err
	}
	x := make([][]float64, len(grads))
	if err := hvp.SolveRecorded(ctx, f, x, grads, rep); err != nil {
		return nil, err
	}
	inf.delta = x
	d.Lambda, d.Trace, d.MinEig, d.MaxEig = rep.Lambda, rep.Trace, rep.MinEig, rep.MaxEig
	d.NegativeEigenvalues = rep.NegativeEigs
	inf.damping = rep.Rho
	for k := range rep.Iterations {
		d.Iterations = max(d.Iterations, rep.Iterations[k])
		d.MaxResidual = math.Max(d.MaxResidual, rep.Residuals[k])
	}
	if rep.Trace <= 0 {
		inf.warn(Warning{Code: NonPositiveTrace, Step: -1, Figure: rep.Trace})
	}
	if rep.NegativeEigs > 0 {
		inf.warn(Warning{Code: Indefinite, Step: -1, Figure: rep.MinEig, Bound: -rep.Lambda, Count: rep.NegativeEigs})
	}
	if rep.Unconverged > 0 {
		inf.warn(Warning{Code: SolverTolerance, Step: -1, Figure: d.MaxResidual, Bound: rep.Tol, Count: rep.Unconverged})
	}
	if p.opt.Estimator == Newton {
		if err := newtonCorrection(ctx, p, f, sg, inf, mark); err != nil {
			return nil, err
		}
	}
	d.InfluenceNorms = make([]float64, len(inf.delta))
	for k, v := range inf.delta {
		d.InfluenceNorms[k] = norm(v)
	}
	return inf, nil
}

func (inf *influence) warn(w Warning) { inf.warnings = append(inf.warnings, w) }

// stationarity fills d's gradient norm, median block gradient norm and
// their ratio: how far theta is from a stationary point of the training
// objective whole.
func stationarity(ctx context.Context, whole *hvp.Objective, theta []float64, grads [][]float64, d *Diagnostics) error {
	total := make([]float64, len(theta))
	if _, err := whole.Gradient(ctx, theta, total); err != nil {
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
	return nil
}

// lissaSampler draws, for LiSSA, training sequences (one part each) and
// with interval blocks truncates each to a prefix S_{1:Kj} of whole
// intervals, j drawn at random (blockwise batch sampling, DESIGN section
// 4); the scale n/size makes the sample's curvature an unbiased estimate
// of the whole one for sequence blocks.
func lissaSampler(p *problem) func(rnd *rand.Rand, size int) ([]hvp.Job, float64) {
	n := len(p.parts)
	K := p.scheme.K
	return func(rnd *rand.Rand, size int) ([]hvp.Job, float64) {
		jobs := make([]hvp.Job, size)
		for k := range jobs {
			i := rnd.IntN(n)
			jobs[k] = hvp.Job{Batch: i}
			if p.scheme.Kind != blocks.Sequences && K > 0 {
				gr := p.parts[i]
				J := (gr.T + K - 1) / K
				jobs[k].Weight = p.maskRows(gr, 0, K*(1+rnd.IntN(J)))
			}
		}
		return jobs, float64(n) / float64(size)
	}
}
