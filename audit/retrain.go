package audit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/stat"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// retrain re-fits the model exactly without some blocks and compares with
// the influence estimates (DESIGN section 5, exact mode). Every re-fit,
// and a re-fit of the full loss, starts at theta_hat and minimises with
// L-BFGS to a tight gradient tolerance. The exact change of a block is
// measured from the full re-fit theta*, so that a model that was not quite
// at a minimum does not add the same drift to every block.
func (r *run) retrain() error {
	bl := r.scheme.Blocks
	n := r.opt.Retrain
	if n < 0 || n > len(bl) {
		n = len(bl)
	}
	rnd := rand.New(rand.NewPCG(r.opt.Seed, 0x726574726169))
	pick := rnd.Perm(len(bl))[:n]
	slices.Sort(pick)

	r.opt.progress("exact re-training", 0, n)
	thetaStar, _, _, err := r.refit(-1)
	if err != nil {
		return err
	}
	if d := norm(sub(thetaStar, r.theta)); d > 0 {
		typical := median(r.res.Diag.InfluenceNorms)
		if typical > 0 && d > typical {
			r.warn(Warning{Code: FullRefitMoved, Step: -1, Figure: d, Bound: typical})
		}
	}
	rr := &RetrainResult{}
	exact := make([][]float64, n)
	for k, b := range pick {
		th, iters, gnorm, err := r.refit(b)
		if err != nil {
			return err
		}
		exact[k] = th
		rr.Blocks = append(rr.Blocks, bl[b].Label)
		de := sub(th, thetaStar)
		di := r.delta[b]
		rr.Cosine = append(rr.Cosine, cosine(de, di))
		rr.NormRatio = append(rr.NormRatio, ratio(norm(di), norm(de)))
		rr.Iterations = append(rr.Iterations, iters)
		rr.FinalGrad = append(rr.FinalGrad, gnorm)
		r.opt.progress("exact re-training", k+1, n)
	}
	rr.MeanCosine = stat.Mean(rr.Cosine, nil)
	rr.MinCosine = slices.Min(rr.Cosine)

	// Prediction changes and intervals with exact and influence parameters.
	deltas := make([][]float64, n)
	for k, b := range pick {
		deltas[k] = r.delta[b]
	}
	pe, err := r.perturbedPredictions("exact re-training", nil, exact)
	if err != nil {
		return err
	}
	star, err := r.perturbedPredictions("exact re-training", nil, [][]float64{thetaStar})
	if err != nil {
		return err
	}
	var xe, xi []float64
	full := make([][]float64, len(bl)) // influence predictions indexed by block
	fullExact := make([][]float64, len(bl))
	pi, err := r.perturbedPredictions("exact re-training", deltas, nil)
	if err != nil {
		return err
	}
	for k, b := range pick {
		full[b], fullExact[b] = pi[k], pe[k]
		for p, pt := range r.points {
			xe = append(xe, pe[k][p]-star[0][p])
			xi = append(xi, pi[k][p]-pt.pred)
		}
	}
	rr.PredCorrelation = stat.Correlation(xe, xi, nil)
	chosen := map[int]bool{}
	for _, b := range pick {
		chosen[b] = true
	}
	keep := func(b int) bool { return chosen[b] }
	// Exact jackknife+ needs exact residuals: recompute them with exact
	// parameters for the chosen blocks.
	exactEntries, err := r.exactResiduals(pick, exact)
	if err != nil {
		return err
	}
	li := r.intervalsFor(r.opt.Alpha, full, keep)
	saved := r.entries
	r.entries = exactEntries
	le := r.intervalsFor(r.opt.Alpha, fullExact, keep)
	r.entries = saved
	rr.InfluenceCoverage, rr.InfluenceLength = r.coverOf(li)
	rr.ExactCoverage, rr.ExactLength = r.coverOf(le)
	r.res.Retrain = rr
	if rr.MeanCosine < 0.9 {
		r.warn(Warning{Code: PoorAgreement, Step: -1, Figure: rr.MeanCosine, Bound: 0.9, Count: n, Ratio: rr.PredCorrelation})
	}
	return nil
}

// coverOf is the coverage and mean finite length over labelled points.
func (r *run) coverOf(l limits) (cov, length float64) {
	var c, n, s, m float64
	for p, pt := range r.points {
		if !pt.has {
			continue
		}
		n++
		if l.lo[p] <= pt.y && pt.y <= l.up[p] {
			c++
		}
		if !math.IsInf(l.lo[p], 0) && !math.IsInf(l.up[p], 0) {
			s += l.up[p] - l.lo[p]
			m++
		}
	}
	return ratio(c, n), ratio(s, m)
}

// exactResiduals recomputes the residual entries of the chosen blocks with
// their exactly re-trained parameters.
func (r *run) exactResiduals(pick []int, exact [][]float64) (map[forecast][]entry, error) {
	saved := r.delta
	deltas := make([][]float64, len(r.scheme.Blocks))
	for b := range deltas {
		deltas[b] = make([]float64, len(r.theta)) // unused blocks: theta_hat
	}
	for k, b := range pick {
		deltas[b] = sub(exact[k], r.theta)
	}
	savedEntries, savedNaive, savedInfl := r.entries, r.naive, r.res.Diag.Influential
	r.delta = deltas
	err := r.residualsPhase("exact re-training")
	out := r.entries
	r.delta, r.entries, r.naive, r.res.Diag.Influential = saved, savedEntries, savedNaive, savedInfl
	return out, err
}

// blockObjective is the loss without block b (b < 0: the full loss).
func (r *run) blockObjective(b int) *hvp.Objective {
	obj := r.objective(r.groups)
	if b < 0 {
		return obj
	}
	blk := r.scheme.Blocks[b]
	for gi, gr := range r.groups {
		w := slices.Clone(gr.weight)
		B := len(gr.seqs)
		for bi, i := range gr.seqs {
			for _, f := range r.io.forecasts(gr.T) {
				if blk.Deletes(i, f.T, f.H) {
					w[r.io.index(B, gr.T, bi, f.T, f.H)] = 0
				}
			}
		}
		obj.Batches[gi].Weight = w
	}
	return obj
}

// refit minimises L(.; w_-b) from theta_hat (b < 0: the full loss): with
// Newton steps on the dense Hessian when the model is small enough for the
// exact solver, with L-BFGS otherwise.
func (r *run) refit(b int) (theta []float64, iters int, gradNorm float64, err error) {
	obj := r.blockObjective(b)
	if r.g.NumParams() <= AutoExactMax {
		return r.newton(obj)
	}
	return r.lbfgs(obj)
}

// newtonEig is an eigendecomposition of a Hessian, the Newton matrix.
type newtonEig struct {
	vals []float64
	vecs *mat.Dense
}

func (r *run) hessianEig(obj *hvp.Objective, theta []float64) (*newtonEig, error) {
	h, err := obj.Dense(r.ctx, hvp.Hessian, theta)
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
// mu (saddle-free, so always a descent direction) and backtracking; the
// Hessian is recomputed when the gradient stops falling fast. It stops at
// a gradient norm of 1e-10 times the typical block gradient, or when no
// step decreases the loss any more (converged to rounding).
func (r *run) newton(obj *hvp.Objective) ([]float64, int, float64, error) {
	theta := slices.Clone(r.theta)
	P := len(theta)
	g := make([]float64, P)
	tol := 1e-10 * math.Max(r.res.Diag.BlockGradMedian, 1e-300)
	ne := r.base
	if ne == nil {
		var err error
		if ne, err = r.hessianEig(obj, theta); err != nil {
			return nil, 0, 0, err
		}
		r.base = ne
	}
	mu := 1e-10 * math.Max(math.Abs(ne.vals[0]), math.Abs(ne.vals[P-1]))
	loss, err := obj.Gradient(r.ctx, theta, g)
	if err != nil {
		return nil, 0, 0, err
	}
	it := 0
	for ; it < 200 && norm(g) > tol; it++ {
		s := ne.step(g, mu)
		accepted := false
		for a := 1.0; a > 1e-6; a /= 2 {
			next := make([]float64, P)
			for i := range next {
				next[i] = theta[i] + a*s[i]
			}
			l, err := obj.Value(r.ctx, next)
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
		before := norm(g)
		if _, err := obj.Gradient(r.ctx, theta, g); err != nil {
			return nil, 0, 0, err
		}
		if norm(g) > 0.25*before {
			// Slow: the Newton matrix is stale; take the Hessian here.
			if ne, err = r.hessianEig(obj, theta); err != nil {
				return nil, 0, 0, err
			}
		}
	}
	return theta, it, norm(g), nil
}

// lbfgs minimises obj from theta_hat with L-BFGS (large models).
func (r *run) lbfgs(obj *hvp.Objective) ([]float64, int, float64, error) {
	var ferr error
	grad := make([]float64, len(r.theta))
	scale := math.Max(r.res.Diag.BlockGradMedian, 1e-12)
	prob := optimize.Problem{
		Func: func(x []float64) float64 {
			v, err := obj.Value(r.ctx, x)
			if err != nil && ferr == nil {
				ferr = err
			}
			return v
		},
		Grad: func(g, x []float64) {
			if _, err := obj.Gradient(r.ctx, x, g); err != nil && ferr == nil {
				ferr = err
			}
		},
	}
	set := &optimize.Settings{GradientThreshold: 1e-9 * scale, MajorIterations: 20000, Converger: &optimize.FunctionConverge{Absolute: 0, Relative: 0, Iterations: 200}}
	res, err := optimize.Minimize(prob, slices.Clone(r.theta), set, &optimize.LBFGS{Store: 30})
	if ferr != nil {
		return nil, 0, 0, ferr
	}
	if err != nil && res == nil {
		return nil, 0, 0, fmt.Errorf("audit: exact re-training: %w", err)
	}
	if _, err := obj.Gradient(r.ctx, res.X, grad); err != nil {
		return nil, 0, 0, err
	}
	return res.X, res.Stats.MajorIterations, norm(grad), nil
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func cosine(a, b []float64) float64 {
	na, nb := norm(a), norm(b)
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s / (na * nb)
}
