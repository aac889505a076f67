package audit

import (
	"context"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Tilted re-fits of a model stopped early look for a stationary point,
// not a minimum.
//
// A block re-fit of a model not at a stationary point of its loss is
// tilted (retrain): it works on F_b(theta) = L_-b(theta) -
// grad L(theta_hat).theta, whose gradient grad L_-b(theta) -
// grad L(theta_hat) is -grad L_b at theta_hat. Minimising F_b, as the
// re-fits of a converged model minimise L_-b, fails on the models this is
// for: the linear tilt makes F_b unbounded below wherever the loss grows
// slower than linearly, and a tanh recurrence trained without weight
// decay has a bounded loss in its recurrent weights. On
// audit/testdata/longseries (an RNN stopped by Adam after 400 steps,
// stationarity ratio 0.52, Hessian eigenvalues from -34 to 2.2e4) the
// saddle-free Newton minimisation of three interval blocks ran to |theta|
// of 1e3 to 3e6 with F_b at -1e4 to -3e6 and gradient norms of 1e4 to
// 1e15, never converging (issue 23: cosines 0.37, 0.05, 0.00 against the
// influence steps). What the influence estimate approximates, and what
// the iterated Newton estimator converges to (newtoniter.go), is the
// stationary point of F_b nearest theta_hat: where grad L_-b(theta) =
// grad L(theta_hat), the leave-block-out optimum relative to where the
// model stopped. So tilted re-fits of small models solve grad F_b = 0 by
// Newton's method on the gradient (rootNewton): Levenberg-Marquardt
// steps -(H^2 + mu I)^-1 H g with H the Hessian of F_b at the iterate
// (eigendecomposed), a backtracking line search on |g|, mu raised
// tenfold when no step lowers |g| (towards gradient descent on |g|^2/2)
// and lowered again after a success. Near a non-degenerate stationary
// point (minimum or saddle) it converges quadratically.

// rootNewton solves grad obj = 0 from theta_hat (see above); it returns
// the iterate, the iterations and the final gradient norm. It stops at a
// gradient norm of 1e-10 times the typical block gradient, at the
// iteration cap or the deadline, or when mu exceeds 1e10 times the
// largest |eigenvalue| (no step lowers |g|: a local minimum of |g| that
// is not a root).
func (rf *refitting) rootNewton(ctx context.Context, obj *refitObjective, deadline time.Time) ([]float64, int, float64, error) {
	theta := slices.Clone(rf.p.theta)
	P := len(theta)
	g := make([]float64, P)
	tol := 1e-10 * math.Max(rf.gradScale, 1e-300)
	if _, err := obj.Gradient(ctx, theta, g); err != nil {
		return nil, 0, 0, err
	}
	ne := rf.base
	scale := math.Max(math.Abs(ne.vals[0]), math.Abs(ne.vals[P-1]))
	mu := 1e-14 * scale * scale
	it := 0
	gn := make([]float64, P)
	for ; it < rf.p.retrainMaxIter() && num.Norm(g) > tol && (deadline.IsZero() || time.Now().Before(deadline)); it++ {
		if it > 0 {
			var err error
			if ne, err = rf.hessianEig(ctx, obj.Objective, theta); err != nil {
				return nil, 0, 0, err
			}
		}
		accepted := false
		for !accepted && mu <= 1e10*scale*scale {
			s := ne.rootStep(g, mu)
			for a := 1.0; a > 1e-4; a /= 2 {
				next := make([]float64, P)
				for i := range next {
					next[i] = theta[i] + a*s[i]
				}
				if _, err := obj.Gradient(ctx, next, gn); err != nil {
					return nil, 0, 0, err
				}
				if num.Norm(gn) < (1-1e-4*a)*num.Norm(g) {
					theta, accepted = next, true
					copy(g, gn)
					break
				}
			}
			if accepted {
				mu = math.Max(mu/10, 1e-12*scale*scale)
			} else {
				mu *= 10
			}
		}
		if !accepted {
			break
		}
	}
	return theta, it, num.Norm(g), nil
}

// rootStep returns -(H^2 + mu I)^-1 H g for H = V diag(vals) V^T: the
// Newton step on grad = 0 (mu -> 0), a descent direction for |g|^2/2 for
// any mu > 0.
func (ne *newtonEig) rootStep(g []float64, mu float64) []float64 {
	P := len(g)
	var t mat.VecDense
	t.MulVec(ne.vecs.T(), mat.NewVecDense(P, g))
	for i := 0; i < P; i++ {
		l := ne.vals[i]
		t.SetVec(i, -t.AtVec(i)*l/(l*l+mu))
	}
	var s mat.VecDense
	s.MulVec(ne.vecs, &t)
	return s.RawVector().Data
}
