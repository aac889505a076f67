package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/stat"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// refitting is what the exact re-fits of one audit share: the problem,
// the median block gradient (their convergence scale) and, for models
// small enough for Newton re-fits, the eigendecomposition of the Hessian
// of the full loss at theta_hat, every re-fit's first Newton matrix.
type refitting struct {
	p         *problem
	gradScale float64 // Diagnostics.BlockGradMedian
	base      *newtonEig
	// tilt, when set, is the gradient of the full loss at theta_hat,
	// subtracted from every block re-fit's gradient (see retrain).
	tilt []float64
}

// retrain is the optional re-training check (DESIGN section 5, exact
// mode): it re-fits the model exactly without some blocks and compares
// with the influence estimates inf. Every re-fit, and a re-fit of the
// full loss, starts at theta_hat and minimises to a tight gradient
// tolerance (Newton steps for small models, L-BFGS otherwise). The exact
// change of a block is measured from the full re-fit theta*, so that a
// model that was not quite at a minimum does not add the same drift to
// every block.
//
// A model stopped early is far from a minimum, and its full re-fit may
// not converge at all (issue 23: on an early-stopped LSTM the gradient
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
// (rootNewton, retrainroot.go). Skipping the full re-fit
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
	if p.g.NumParams() <= AutoExactMax {
		// Newton re-fits start from the Hessian of the full loss at
		// theta_hat: one eigendecomposition for all of them.
		var err error
		if rf.base, err = rf.hessianEig(ctx, p.blockObjective(-1), p.theta); err != nil {
			return nil, nil, err
		}
	}
	rr := &RetrainResult{Estimator: string(inf.estimator)}
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
	if d := num.Norm(sub(thetaStar, p.theta)); d > 0 {
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
		de := sub(th, thetaStar)
		di := inf.delta[b]
		rr.Cosine = append(rr.Cosine, cosine(de, di))
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
		exactDeltas[b] = sub(exact[k], p.theta)
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
	if b < 0 {
		return obj
	}
	blk := p.scheme.Blocks[b]
	for gi, gr := range p.groups {
		w := slices.Clone(gr.weight)
		B := len(gr.seqs)
		for bi, i := range gr.seqs {
			for _, f := range p.io.Forecasts(gr.T) {
				if blk.Deletes(i, f.T, f.H) {
					w[p.io.Index(B, gr.T, bi, f.T, f.H)] = 0
				}
			}
		}
		obj.Batches[gi].Weight = w
	}
	return obj
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
	obj := &refitObjective{Objective: rf.p.blockObjective(b)}
	if b >= 0 {
		obj.tilt = rf.tilt
	}
	switch {
	case rf.base != nil && obj.tilt != nil:
		theta, iters, gradNorm, err = rf.rootNewton(ctx, obj, deadline)
	case rf.base != nil:
		theta, iters, gradNorm, err = rf.newton(ctx, obj, deadline)
	default:
		theta, iters, gradNorm, err = rf.lbfgs(ctx, obj, deadline)
	}
	return theta, iters, gradNorm, err == nil && gradNorm <= rf.tol(), err
}

// newtonEig is an eigendecomposition of a Hessian, the Newton matrix.
type newtonEig struct {
	vals []float64
	vecs *mat.Dense
}

// hessianEig is the eigendecomposition of obj's Hessian at theta.
func (rf *refitting) hessianEig(ctx context.Context, obj *hvp.Objective, theta []float64) (*newtonEig, error) {
	h, err := obj.Dense(ctx, hvp.Hessian, theta)
	if err != nil {
		return nil, err
	}
	var e mat.EigenSym
	if !e.Factorize(h, true) {
		return nil, fmt.Errorf("audit: exact re-training: eigendecomposition failed")
	}
	ne := &newtonEig{vals: e.Values(nil), vecs: &mat.Dense{}}
	e.VectorsTo(ne.vecs)
	return ne, nil
}

// step returns -(|H| + mu I)^-1 g, a descent direction for any mu > 0.
func (ne *newtonEig) step(g []float64, mu float64) []float64 {
	P := len(g)
	var t mat.VecDense
	t.MulVec(ne.vecs.T(), mat.NewVecDense(P, g))
	for i := 0; i < P; i++ {
		t.SetVec(i, -t.AtVec(i)/(math.Abs(ne.vals[i])+mu))
	}
	var s mat.VecDense
	s.MulVec(ne.vecs, &t)
	return s.RawVector().Data
}

// newton minimises obj from theta_hat: Newton steps with |eigenvalues| +
// mu (saddle-free, so always a descent direction) and backtracking, from
// the Newton matrix rf.base; the Hessian is recomputed when the gradient
// stops falling fast. It stops at a gradient norm of 1e-10 times the
// typical block gradient, or when no step decreases the loss any more
// (converged to rounding).
func (rf *refitting) newton(ctx context.Context, obj *refitObjective, deadline time.Time) ([]float64, int, float64, error) {
	theta := slices.Clone(rf.p.theta)
	P := len(theta)
	g := make([]float64, P)
	tol := 1e-10 * math.Max(rf.gradScale, 1e-300)
	ne := rf.base
	mu := 1e-10 * math.Max(math.Abs(ne.vals[0]), math.Abs(ne.vals[P-1]))
	loss, err := obj.Gradient(ctx, theta, g)
	if err != nil {
		return nil, 0, 0, err
	}
	it := 0
	for ; it < rf.p.retrainMaxIter() && num.Norm(g) > tol && (deadline.IsZero() || time.Now().Before(deadline)); it++ {
		s := ne.step(g, mu)
		accepted := false
		for a := 1.0; a > 1e-6; a /= 2 {
			next := make([]float64, P)
			for i := range next {
				next[i] = theta[i] + a*s[i]
			}
			l, err := obj.Value(ctx, next)
			if err != nil {
				return nil, 0, 0, err
			}
			if l < loss {
				theta, loss, accepted = next, l, true
				break
			}
		}
		if !accepted {
			break // no decrease left: at the minimum to rounding
		}
		before := num.Norm(g)
		if _, err := obj.Gradient(ctx, theta, g); err != nil {
			return nil, 0, 0, err
		}
		if num.Norm(g) > 0.25*before && (deadline.IsZero() || time.Now().Before(deadline)) {
			// Slow: the Newton matrix is stale; take the Hessian here
			// (not past the deadline, where the loop ends anyway: on a
			// model of 1,000 parameters it costs more than a step).
			if ne, err = rf.hessianEig(ctx, obj.Objective, theta); err != nil {
				return nil, 0, 0, err
			}
		}
	}
	return theta, it, num.Norm(g), nil
}

// lbfgs minimises obj from theta_hat with L-BFGS (large models).
func (rf *refitting) lbfgs(ctx context.Context, obj *refitObjective, deadline time.Time) ([]float64, int, float64, error) {
	var ferr error
	grad := make([]float64, len(rf.p.theta))
	scale := math.Max(rf.gradScale, 1e-12)
	prob := optimize.Problem{
		Func: func(x []float64) float64 {
			v, err := obj.Value(ctx, x)
			if err != nil && ferr == nil {
				ferr = err
			}
			return v
		},
		Grad: func(g, x []float64) {
			if _, err := obj.Gradient(ctx, x, g); err != nil && ferr == nil {
				ferr = err
			}
		},
	}
	set := &optimize.Settings{GradientThreshold: 1e-9 * scale, MajorIterations: rf.p.retrainMaxIter(), Converger: &optimize.FunctionConverge{Absolute: 0, Relative: 0, Iterations: 200}}
	if !deadline.IsZero() {
		set.Runtime = max(time.Until(deadline), time.Millisecond)
	}
	res, err := optimize.Minimize(prob, slices.Clone(rf.p.theta), set, &optimize.LBFGS{Store: 30})
	if ferr != nil {
		return nil, 0, 0, ferr
	}
	if err != nil && res == nil {
		return nil, 0, 0, errs.Wrapf(err, "audit: exact re-training: ")
	}
	if _, err := obj.Gradient(ctx, res.X, grad); err != nil {
		return nil, 0, 0, err
	}
	return res.X, res.Stats.MajorIterations, num.Norm(grad), nil
}

// refitObjective is a re-fit's loss: the loss without a block, minus
// tilt.theta when tilt is set (the tilted re-fits of retrain). The
// Hessian is the Objective's: the tilt is linear.
type refitObjective struct {
	*hvp.Objective
	tilt []float64
}

// Value is the loss minus tilt.theta.
func (o *refitObjective) Value(ctx context.Context, theta []float64) (float64, error) {
	v, err := o.Objective.Value(ctx, theta)
	for i, t := range o.tilt {
		v -= t * theta[i]
	}
	return v, err
}

// Gradient writes the gradient minus tilt into grad and returns Value.
func (o *refitObjective) Gradient(ctx context.Context, theta, grad []float64) (float64, error) {
	v, err := o.Objective.Gradient(ctx, theta, grad)
	for i, t := range o.tilt {
		v -= t * theta[i]
		grad[i] -= t
	}
	return v, err
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func cosine(a, b []float64) float64 {
	na, nb := num.Norm(a), num.Norm(b)
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s / (na * nb)
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
	switch o.RetrainStart {
	case RetrainWarm:
		return true
	case RetrainFull:
		return false
	}
	return stationarity > StationarityBound
}
