package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Iterated Newton steps on the leave-block-out objective.
//
// The one-step estimator (newtonCorrection) takes one Newton step from
// theta_hat with the curvature C at theta_hat. An interval or nested
// block deletes an interval of every sequence, a large share of the
// data, so its leave-out optimum is further from theta_hat than a
// sequence's, and one step with the Gauss-Newton curvature taken at
// theta_hat falls short. Interval blocks are few (T/K), so the audit can
// afford to iterate on the tilted leave-block-out objective
//
//	F_b(theta) = L_-b(theta) - grad L(theta_hat).theta,  grad F_b(theta) = grad L_-b(theta) - grad L(theta_hat),
//
// from theta_0 = theta_hat with the exact gradient recomputed at every
// iterate (one pass over the training data), by preconditioned L-BFGS
// (refit.QuasiNewton): its initial inverse Hessian is the block's Woodbury
// solve (C - C_b)^-1 of the one-step estimator (the curvature's
// factorisation at theta_hat and the block's Jacobian rows, reused at
// every step), so its first full step is the one-step estimate (grad
// F_b(theta_hat) = -grad L_b(theta_hat)), and its secant pairs learn
// what the Gauss-Newton curvature at theta_hat misses. Its limit is where
// grad L_-b(theta) = grad L(theta_hat), whatever the curvature
// approximation, since the gradient is exact: for a model at a
// stationary point of its loss (grad L(theta_hat) = 0) the
// leave-block-out optimum nearest theta_hat, what exact re-training from
// theta_hat finds; for a model stopped early, the leave-block-out optimum
// relative to where it stopped (the objective tilted so that theta_hat
// is stationary with every block: only the block's deletion moves the
// model), the target of the tilted warm-started exact re-fits
// (Options.RetrainStart). A model stopped early is not iterated by
// default: its tilted objective can be unbounded below (a tanh
// recurrence trained without weight decay has a bounded loss in its
// recurrent weights, which the linear tilt then drives to infinity:
// measured on audit/testdata/longseries, the iterates' distance from
// theta_hat grew from 0.2-2.5 to 4-30 in 20 steps, none converged).
//
// Stop rule: a block stops as converged when a step |theta_{k+1} -
// theta_k| is at most newtonIterTol |theta_1 - theta_0|, and as not
// converged after Options.NewtonSteps steps (the default
// newtonDefaultSteps); each step costs one gradient pass and at least one
// value pass (the Armijo line search) over the training data. The
// audit's diagnostics report each block's steps, whether it converged,
// the passes and the wall time (NewtonIteration). Unbounded blocks
// (leverage within leverageLimit of 1) keep their infinitesimal step and
// are not iterated. Each iterated block takes its own residuals from a
// forward pass at its final theta_-b, as interval and nested blocks
// always do: the linearised residuals belong to the first step. The
// leverage (the diagonal of S at theta_hat) stays the diagnostic it is,
// and the unbounded-block test is the one-step estimator's.

// newtonIterTol is the iteration's relative step tolerance: a step below
// 1e-4 of the first (the one-step estimate's) moves the limits by far
// less than their sampling error.
const newtonIterTol = 1e-4

// newtonDefaultSteps is the most Newton steps per block for interval and
// nested blocks when Options.NewtonSteps is 0.
const newtonDefaultSteps = 20

// newtonSteps is the most Newton steps per block of the problem's
// scheme for a model with stationarity ratio stationarity
// (Diagnostics.Stationarity): Options.NewtonSteps, or by default
// newtonDefaultSteps for interval and nested blocks of a model at a
// stationary point and 1 (the one-step estimator) for sequence blocks,
// which are many and closer to theta_hat, and for a model stopped early
// (see newtonIterate), and for blocks of more than newtonMaxBlockTerms
// loss terms (maxTerms is the largest block's), whose Woodbury solve, a
// Lanczos process, would be repeated at every step; with the note saying
// why ("" when none).
func (p *problem) newtonSteps(stationarity float64, maxTerms int) (int, string) {
	switch {
	case p.opt.NewtonSteps > 0:
		return p.opt.NewtonSteps, ""
	case p.scheme.Kind == blocks.Sequences:
		return 1, ""
	case maxTerms > newtonMaxBlockTerms:
		return 1, fmt.Sprintf("The Newton steps of the %s blocks are not iterated: blocks of more than %d loss terms (here up to %d) apply their leave-out solve by a Lanczos process, at every step of the iteration (on examples/synthetic, 4 interval blocks of 3,000 terms, 20 steps took the audit from 11 s to 98 s). Set the number of Newton steps to iterate anyway.",
			p.scheme.Kind, newtonMaxBlockTerms, maxTerms)
	case stationarity > StationarityBound:
		return 1, fmt.Sprintf("The model is not at a stationary point of its loss (stationarity ratio %.3g > %g), so the Newton steps of the %s blocks are not iterated: the tilted leave-block-out objective they would iterate on can be unbounded below (a saturating recurrence trained without weight decay), and minimising it moves the model far from where it stopped. Set the number of Newton steps to iterate anyway.",
			stationarity, StationarityBound, p.scheme.Kind)
	}
	return newtonDefaultSteps, ""
}

// NewtonIteration is what the iterated Newton estimator did (see
// Options.NewtonSteps): per block the Newton steps it took (1: the
// one-step estimate; 0: an unbounded block, which keeps the
// infinitesimal step) and whether it converged, the blocks that did not,
// its passes over the training data and its wall time.
type NewtonIteration struct {
	MaxSteps    int
	Steps       []int
	Converged   []bool
	Unconverged int
	// Passes counts the passes over the training data: per block one
	// gradient pass at theta_hat and per step one gradient pass and the
	// line search's value passes, and one for the full gradient at
	// theta_hat.
	Passes int
	Time   time.Duration
}

// newtonIterate refines the one-step Newton estimates inf.delta of the
// bounded blocks by the iteration above, up to p.newtonSteps() steps.
// block(k) gives block k's deleted terms with their Jacobian rows J and
// A J^T, A = (C + lambda I)^-1 as f applies it. It returns nil when the
// scheme takes one step.
func newtonIterate(ctx context.Context, p *problem, f hvp.Factor, inf *influence, unbounded []bool, block func(k int) ([]ownTerm, [][]float64, [][]float64)) (*NewtonIteration, error) {
	maxTerms := 0
	for k := range p.scheme.Blocks {
		ts, _, _ := block(k)
		maxTerms = max(maxTerms, len(ts))
	}
	maxSteps, note := p.newtonSteps(inf.diag.Stationarity, maxTerms)
	if note != "" {
		inf.notes = append(inf.notes, note)
	}
	if maxSteps <= 1 {
		return nil, nil
	}
	start := time.Now()
	bl := p.scheme.Blocks
	P := len(p.theta)
	it := &NewtonIteration{MaxSteps: maxSteps, Steps: make([]int, len(bl)), Converged: make([]bool, len(bl))}
	tilt := make([]float64, P)
	if _, err := p.objective(p.groups).Gradient(ctx, p.theta, tilt); err != nil {
		return nil, err
	}
	it.Passes++
	for k := range bl {
		if unbounded[k] {
			continue
		}
		ts, J, AJ := block(k)
		obj := &refit.Objective{Objective: p.blockObjective(k), Tilt: tilt}
		// precond applies (C - C_b)^-1, the block's Woodbury solve.
		precond := func(g []float64) ([]float64, error) {
			u := [][]float64{nil}
			if err := f.SolveAll(ctx, u, [][]float64{g}); err != nil {
				return nil, err
			}
			st, err := newtonStep(p.opt.Loss, ts, J, AJ, u[0])
			if err != nil {
				return nil, errs.Wrapf(err, "audit: block %s: ", bl[k].Label)
			}
			return st.delta, nil
		}
		at := func(delta []float64) []float64 {
			theta := make([]float64, P)
			for i := range theta {
				theta[i] = p.theta[i] + delta[i]
			}
			return theta
		}
		value := func(delta []float64) (float64, error) {
			it.Passes++
			return obj.Value(ctx, at(delta))
		}
		grad := func(delta, g []float64) (float64, error) {
			it.Passes++
			return obj.Gradient(ctx, at(delta), g)
		}
		delta, steps, conv, err := refit.QuasiNewton(value, grad, precond, inf.delta[k], maxSteps, newtonIterTol)
		if err != nil {
			return nil, errs.Wrapf(err, "audit: block %s: Newton iteration: ", bl[k].Label)
		}
		inf.delta[k] = delta
		it.Steps[k], it.Converged[k] = steps, conv
		if !conv {
			it.Unconverged++
		}
		p.opt.progress("Newton iteration", k+1, len(bl))
	}
	it.Time = time.Since(start)
	return it, nil
}

// note says in a sentence what the iteration did: the steps per block,
// how many blocks converged and the passes over the training data.
func (it *NewtonIteration) note() string {
	lo, hi, n := 0, 0, 0
	for _, s := range it.Steps {
		if s == 0 {
			continue // unbounded: not iterated
		}
		if n == 0 || s < lo {
			lo = s
		}
		hi = max(hi, s)
		n++
	}
	steps := fmt.Sprintf("%d", hi)
	if lo != hi {
		steps = fmt.Sprintf("%d to %d", lo, hi)
	}
	return fmt.Sprintf("The Newton steps were iterated on the leave-block-out objective with its exact gradient (preconditioned L-BFGS from the one-step estimate): %s steps per block, at most %d; %d of %d blocks converged (a step below %g of the first), the others keep their last iterate; %d passes over the training data.",
		steps, it.MaxSteps, n-it.Unconverged, n, newtonIterTol, it.Passes)
}
