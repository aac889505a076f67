package audit

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// refitting is what the exact re-fits of one audit share: the problem,
// the median block gradient (their convergence scale) and, for models
// small enough for Newton re-fits, the eigendecomposition of the Hessian
// of the full loss at theta_hat, every re-fit's first Newton matrix.
type refitting struct {
	p         *problem
	gradScale float64 // Diagnostics.BlockGradMedian
	base      *refit.Eig
	// tilt, when set, is the gradient of the full loss at theta_hat,
	// subtracted from every block re-fit's gradient (see retrain).
	tilt []float64
	// prox, when set, re-fits with the training budget (TrainBudget).
	prox *refit.ProximalProblem
}

// retrain is the optional re-training check (docs/design.md, section
// 9): it re-fits the model exactly without some blocks and compares
// with the influence estimates inf. Every re-fit, and a re-fit of the
// full loss, starts at theta_hat and minimises to a tight gradient
// tolerance (Newton steps for small models, L-BFGS otherwise). The exact
// change of a block is measured from the full re-fit theta*, so that a
// model that was not quite at a minimum does not add the same drift to
// every block.
//
// A model stopped early is far from a minimum, and its full re-fit may
// not converge at all (on an early-stopped LSTM the gradient
// norm went from 25 to 1e6 while the loss fell, and the full re-fit used
// the whole time budget). So the full re-fit gets its share of the time
// budget, 1/(n+1) for n block re-fits, and when it does not converge the
// block re-fits are tilted instead: each minimises L_-b(theta) -
// g_full(theta_hat).theta from theta_hat, whose full-data version is
// stationary at theta_hat exactly, and the change is measured from
// theta_hat. This is the exact counterpart of the influence estimate,
// which also takes theta_hat as the stationary point (the block's
// gradient is the only force on it), and of the iterated Newton
// estimator's limit (newtoniter.go). The tilted objective can be
// unbounded below, so small models' tilted re-fits solve for its
// stationary point nearest theta_hat instead of minimising it
// (refit.Root). Skipping the full re-fit
// altogether would change the check of converged models, for which theta*
// is the better reference. A re-fit that was never started because the
// budget was spent is "not run" (0 iterations), apart from the re-fits
// that ran and stopped at the iteration cap or the deadline.
func retrain(ctx context.Context, p *problem, ev *evaluation, inf *influence, loo *looResiduals) (*RetrainResult, []Warning, error) {
	bl := p.scheme.Blocks
	n := p.opt.Retrain
	if n < 0 || n > len(bl) {
		n = len(bl)
	}
	rnd := rand.New(rand.NewPCG(p.opt.Seed, 0x726574726169))
	pick := rnd.Perm(len(bl))[:n]
	slices.Sort(pick)

	p.opt.progress("exact re-training", 0, n)
	var deadline time.Time
	if p.opt.RetrainBudget > 0 {
		deadline = time.Now().Add(p.opt.RetrainBudget)
	}
	var warns []Warning
	rf := &refitting{p: p, gradScale: inf.diag.BlockGradMedian}
	if p.opt.TrainBudget != nil {
		rf.prox = p.proximalProblem()
	} else if p.g.NumParams() <= AutoExactMax {
		// Newton re-fits start from the Hessian of the full loss at
		// theta_hat: one eigendecomposition for all of them.
		var err error
		if rf.base, err = refit.HessianEig(ctx, p.blockObjective(-1), p.theta); err != nil {
			return nil, nil, err
		}
	}
	rr := &RetrainResult{Estimator: string(inf.estimator)}
	if rf.prox != nil {
		rr.Budget = rf.prox.Budget.String()
	}
	fullDeadline := deadline
	if !deadline.IsZero() {
		fullDeadline = time.Now().Add(p.opt.RetrainBudget / time.Duration(n+1))
	}
	thetaStar, okStar := p.theta, false
	if rr.Warm = p.opt.warmRefits(inf.diag.Stationarity); !rr.Warm {
		var itStar int
		var gStar float64
		var err error
		thetaStar, itStar, gStar, okStar, err = rf.refit(ctx, -1, fullDeadline)
		if err != nil {
			return nil, nil, err
		}
		rr.FullIterations, rr.FullGrad = itStar, gStar
		if !okStar {
			warns = append(warns, Warning{Code: FullRefitNotConverged, Step: -1, Figure: gStar, Bound: rf.tol(), Count: itStar})
		}
	} else {
		rr.FullGrad = math.NaN()
	}
	if !okStar {
		rf.tilt = make([]float64, len(p.theta))
		if _, err := p.blockObjective(-1).Gradient(ctx, p.theta, rf.tilt); err != nil {
			return nil, nil, err
		}
		thetaStar, rr.Tilted = p.theta, true
	}
	if d := num.Norm(num.Sub(thetaStar, p.theta)); d > 0 {
		typical := num.Median(inf.diag.InfluenceNorms)
		if typical > 0 && d > typical {
			warns = append(warns, Warning{Code: FullRefitMoved, Step: -1, Figure: d, Bound: typical})
		}
	}
	var exact [][]float64
	var used []int // the converged re-fits, by block
	for k, b := range pick {
		rr.Blocks = append(rr.Blocks, bl[b].Label)
		if !deadline.IsZero() && time.Now().After(deadline) {
			// Out of time: not re-fitted.
			rr.Cosine = append(rr.Cosine, math.NaN())
			rr.NormRatio = append(rr.NormRatio, math.NaN())
			rr.Iterations = append(rr.Iterations, 0)
			rr.FinalGrad = append(rr.FinalGrad, math.NaN())
			rr.Converged = append(rr.Converged, false)
			rr.Outcomes = append(rr.Outcomes, OutcomeNotRun)
			rr.NotRun++
			p.opt.progress("exact re-training", k+1, n)
			continue
		}
		// Each re-fit left gets an equal share of the budget left, so
		// that one slow re-fit cannot leave the others not run.
		share := deadline
		if !deadline.IsZero() {
			share = time.Now().Add(time.Until(deadline) / time.Duration(n-k))
		}
		th, iters, gnorm, ok, err := rf.refit(ctx, b, share)
		if err != nil {
			return nil, nil, err
		}
		de := num.Sub(th, thetaStar)
		di := inf.delta[b]
		rr.Cosine = append(rr.Cosine, num.Cosine(de, di))
		rr.NormRatio = append(rr.NormRatio, num.Ratio(num.Norm(di), num.Norm(de)))
		rr.Iterations = append(rr.Iterations, iters)
		rr.FinalGrad = append(rr.FinalGrad, gnorm)
		rr.Converged = append(rr.Converged, ok)
		if ok {
			exact = append(exact, th)
			used = append(used, b)
			rr.Outcomes = append(rr.Outcomes, OutcomeConverged)
		} else {
			rr.Outcomes = append(rr.Outcomes, OutcomeNotConverged)
			rr.NotConverged++
		}
		p.opt.progress("exact re-training", k+1, n)
	}
	if rr.NotConverged > 0 {
		warns = append(warns, Warning{Code: RefitNotConverged, Step: -1, Figure: float64(n), Bound: p.opt.RetrainBudget.Seconds(),
			Count: rr.NotConverged, Ratio: float64(p.retrainMaxIter())})
	}
	if rr.NotRun > 0 {
		warns = append(warns, Warning{Code: RefitNotRun, Step: -1, Figure: float64(n), Bound: p.opt.RetrainBudget.Seconds(), Count: rr.NotRun})
	}
	if len(used) == 0 {
		rr.MeanCosine, rr.MinCosine, rr.PredCorrelation = math.NaN(), math.NaN(), math.NaN()
		rr.ExactCoverage, rr.InfluenceCoverage, rr.ExactLength, rr.InfluenceLength = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return rr, warns, nil
	}
	var cos []float64
	for k, ok := range rr.Converged {
		if ok {
			cos = append(cos, rr.Cosine[k])
		}
	}
	rr.MeanCosine = stat.Mean(cos, nil)
	rr.MinCosine = slices.Min(cos)
	pick, n = used, len(used)

	// Prediction changes and intervals with exact and influence parameters.
	deltas := make([][]float64, n)
	for k, b := range pick {
		deltas[k] = inf.delta[b]
	}
	pe, err := perturbedPredictions(ctx, p, ev, "exact re-training", nil, exact)
	if err != nil {
		return nil, nil, err
	}
	star, err := perturbedPredictions(ctx, p, ev, "exact re-training", nil, [][]float64{thetaStar})
	if err != nil {
		return nil, nil, err
	}
	var xe, xi []float64
	full := make(predMatrix, len(bl)) // influence predictions indexed by block
	fullExact := make(predMatrix, len(bl))
	pi, err := perturbedPredictions(ctx, p, ev, "exact re-training", deltas, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, b := range pick {
		full[b], fullExact[b] = pi[k], pe[k]
		for i, pt := range ev.test {
			xe = append(xe, pe[k][i]-star[0][i])
			xi = append(xi, pi[k][i]-pt.pred)
		}
	}
	rr.PredCorrelation = stat.Correlation(xe, xi, nil)
	chosen := map[int]bool{}
	for _, b := range pick {
		chosen[b] = true
	}
	keep := func(b int) bool { return chosen[b] }
	// Influence jackknife+ from the influence residuals loo; exact
	// jackknife+ from residuals recomputed with the exact parameters of
	// the chosen blocks (the others stay at theta_hat and are not kept).
	exactDeltas := make([][]float64, len(bl))
	for b := range exactDeltas {
		exactDeltas[b] = make([]float64, len(p.theta))
	}
	for k, b := range pick {
		exactDeltas[b] = num.Sub(exact[k], p.theta)
	}
	looExact, err := blockResiduals(ctx, p, exactDeltas, nil, "exact re-training")
	if err != nil {
		return nil, nil, err
	}
	li := jackknifeLimits(ctx, p.workers, p.opt.Alpha, ev.test, 0, full, p.sets(loo.entries), p.self, keep)
	le := jackknifeLimits(ctx, p.workers, p.opt.Alpha, ev.test, 0, fullExact, p.sets(looExact.entries), p.self, keep)
	rr.InfluenceCoverage, rr.InfluenceLength = coverOf(ev.test, li)
	rr.ExactCoverage, rr.ExactLength = coverOf(ev.test, le)
	if rr.MeanCosine < minAgreement {
		warns = append(warns, Warning{Code: PoorAgreement, Step: -1, Figure: rr.MeanCosine, Bound: minAgreement, Count: n, Ratio: rr.PredCorrelation})
	}
	return rr, warns, nil
}

// blockObjective is the loss without block b (b < 0: the full loss).
func (p *problem) blockObjective(b int) *hvp.Objective {
	obj := p.objective(p.groups)
	for gi, gr := range p.groups {
		obj.Batches[gi].Weight = p.blockWeights(gr, b)
	}
	return obj
}

// blockWeights is group gr's weights without block b's terms (b < 0: all).
func (p *problem) blockWeights(gr *group, b int) []float64 {
	if b < 0 {
		return gr.weight
	}
	blk := p.scheme.Blocks[b]
	w := slices.Clone(gr.weight)
	B := len(gr.seqs)
	for bi, i := range gr.seqs {
		for _, f := range p.io.Forecasts(gr.T) {
			if blk.Deletes(i, f.T, f.H) {
				q := p.io.Index(B, gr.T, bi, f.T, f.H)
				clear(w[q : q+max(1, p.io.Classes())]) // a K-class term's K weights
			}
		}
	}
	return w
}

// retrainMaxIter is the iteration cap of one re-fit: RetrainMaxIter, or
// 200 Newton steps (small models) or 20000 L-BFGS iterations.
func (p *problem) retrainMaxIter() int {
	if p.opt.RetrainMaxIter > 0 {
		return p.opt.RetrainMaxIter
	}
	if p.g.NumParams() <= AutoExactMax {
		return 200
	}
	return 20000
}

// tol is the gradient norm below which a re-fit counts as converged:
// 1e-4 times the median block gradient: the step it leaves undone is
// about 1e-4 of a typical leave-one-out shift. (Newton re-fits of the
// synthetic small model stall at the rounding floor at 1e-6 to 3e-6.)
func (rf *refitting) tol() float64 {
	return 1e-4 * math.Max(rf.gradScale, 1e-300)
}

// refit minimises L(.; w_-b) from theta_hat (b < 0: the full loss): with
// Newton steps on the dense Hessian when the model is small enough for the
// exact solver, with L-BFGS otherwise. It stops at the iteration cap or
// the deadline (zero: none); converged says whether the final gradient
// norm is below tol. Newton re-fits start from rf.base.
func (rf *refitting) refit(ctx context.Context, b int, deadline time.Time) (theta []float64, iters int, gradNorm float64, converged bool, err error) {
	if rf.prox != nil {
		// Budgeted: theta_hat moved by the re-fit's change.
		d, err := rf.prox.Refit(ctx, b)
		if err != nil {
			return nil, 0, 0, false, err
		}
		num.AddScaled(d, 1, rf.p.theta)
		return d, rf.prox.Budget.Steps(len(rf.prox.Parts)), math.NaN(), true, nil
	}
	obj := &refit.Objective{Objective: rf.p.blockObjective(b)}
	if b >= 0 {
		obj.Tilt = rf.tilt
	}
	s := refit.Settings{Start: rf.p.theta, GradScale: rf.gradScale, MaxIter: rf.p.retrainMaxIter(), Deadline: deadline, Base: rf.base}
	switch {
	case rf.base != nil && obj.Tilt != nil:
		theta, iters, gradNorm, err = refit.Root(ctx, obj, s)
	case rf.base != nil:
		theta, iters, gradNorm, err = refit.Newton(ctx, obj, s)
	default:
		theta, iters, gradNorm, err = refit.LBFGS(ctx, obj, s)
	}
	return theta, iters, gradNorm, err == nil && gradNorm <= rf.tol(), err
}

// RetrainStart says where exact block re-fits start (Options.RetrainStart).
type RetrainStart string

// Re-fit starts.
const (
	// RetrainAuto is RetrainWarm for a model whose stationarity ratio
	// (Diagnostics.Stationarity) exceeds StationarityBound, a model
	// stopped early, and RetrainFull otherwise.
	RetrainAuto RetrainStart = "auto"
	// RetrainFull first re-fits the full loss to a stationary point
	// theta* (with its share of the budget) and measures exact changes
	// from it; when that does not converge the block re-fits are tilted,
	// as with RetrainWarm.
	RetrainFull RetrainStart = "full"
	// RetrainWarm skips the full re-fit: every block re-fit is
	// warm-started from theta_hat on its loss minus the full gradient at
	// theta_hat (times theta), stationary at theta_hat without the block's
	// terms, with an equal share of the budget, and its change is
	// measured from theta_hat: the exact counterpart of the influence
	// estimate for a model stopped early, whose full re-fit would not
	// converge or would wander far from the trained model.
	RetrainWarm RetrainStart = "warm"
)

// warmRefits reports whether the block re-fits skip the full re-fit
// (RetrainWarm), given the model's stationarity ratio.
func (o *Options) warmRefits(stationarity float64) bool {
	if o.TrainBudget != nil {
		return true // budgeted re-fits are measured from theta_hat
	}
	switch o.RetrainStart {
	case RetrainWarm:
		return true
	case RetrainFull:
		return false
	}
	return stationarity > StationarityBound
}
