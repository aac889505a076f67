// Package refit re-fits a model's training loss from a start point: the
// minimisers of audit's exact re-training (docs/design.md, section 9).
// Newton takes saddle-free Newton steps on a Hessian's
// eigendecomposition (small models), LBFGS runs L-BFGS (large ones), and Root solves for the stationary point of
// a tilted loss nearest the start (Objective with Tilt), each under an
// iteration cap and a deadline. Which blocks are re-fitted, from where,
// and what the re-fits are compared with is audit's.
//
// Tilted re-fits of a model stopped early look for a stationary point,
// not a minimum.
//
// A block re-fit of a model not at a stationary point of its loss is
// tilted (audit's retrain): it works on F_b(theta) = L_-b(theta) -
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
// 1e15, never converging (cosines 0.37, 0.05, 0.00 against the
// influence steps). What the influence estimate approximates, and what
// the iterated Newton estimator converges to (audit's newtoniter.go), is the
// stationary point of F_b nearest theta_hat: where grad L_-b(theta) =
// grad L(theta_hat), the leave-block-out optimum relative to where the
// model stopped. So tilted re-fits of small models solve grad F_b = 0 by
// Newton's method on the gradient (Root): Levenberg-Marquardt
// steps -(H^2 + mu I)^-1 H g with H the Hessian of F_b at the iterate
// (eigendecomposed), a backtracking line search on |g|, mu raised
// tenfold when no step lowers |g| (towards gradient descent on |g|^2/2)
// and lowered again after a success. Near a non-degenerate stationary
// point (minimum or saddle) it converges quadratically.
package refit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Settings are what a re-fit starts from and where it stops.
type Settings struct {
	// Start is the start point (the trained parameters theta_hat); the
	// re-fits do not modify it.
	Start []float64
	// GradScale is the typical gradient norm (the median block
	// gradient): Newton and Root stop at 1e-10 times it, LBFGS at 1e-9.
	GradScale float64
	// MaxIter is the iteration cap.
	MaxIter int
	// Deadline stops a re-fit (zero: none).
	Deadline time.Time
	// Base is the Newton matrix Newton and Root start from (HessianEig
	// at Start); LBFGS does not use it.
	Base *Eig
}

// Objective is a re-fit's loss: the loss without a block, minus
// Tilt.theta when Tilt is set (the tilted re-fits of a model stopped
// early). The
// Hessian is the Objective's: the tilt is linear.
type Objective struct {
	*hvp.Objective
	Tilt []float64
}

// Value is the loss minus Tilt.theta.
func (o *Objective) Value(ctx context.Context, theta []float64) (float64, error) {
	v, err := o.Objective.Value(ctx, theta)
	for i, t := range o.Tilt {
		v -= t * theta[i]
	}
	return v, err
}

// Gradient writes the gradient minus Tilt into grad and returns Value.
func (o *Objective) Gradient(ctx context.Context, theta, grad []float64) (float64, error) {
	v, err := o.Objective.Gradient(ctx, theta, grad)
	for i, t := range o.Tilt {
		v -= t * theta[i]
		grad[i] -= t
	}
	return v, err
}

// Eig is an eigendecomposition of a Hessian, the Newton matrix of
// Newton and Root.
type Eig struct {
	vals []float64
	vecs *mat.Dense
}

// HessianEig is the eigendecomposition of obj's Hessian at theta.
func HessianEig(ctx context.Context, obj *hvp.Objective, theta []float64) (*Eig, error) {
	h, err := obj.Dense(ctx, hvp.Hessian, theta)
	if err != nil {
		return nil, err
	}
	var e mat.EigenSym
	if !e.Factorize(h, true) {
		return nil, fmt.Errorf("audit: exact re-training: eigendecomposition failed")
	}
	ne := &Eig{vals: e.Values(nil), vecs: &mat.Dense{}}
	e.VectorsTo(ne.vecs)
	return ne, nil
}

// step returns -(|H| + mu I)^-1 g, a descent direction for any mu > 0.
func (ne *Eig) step(g []float64, mu float64) []float64 {
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

// Newton minimises obj from s.Start: Newton steps with |eigenvalues| +
// mu (saddle-free, so always a descent direction) and backtracking, from
// the Newton matrix s.Base; the Hessian is recomputed when the gradient
// stops falling fast. It stops at a gradient norm of 1e-10 times the
// typical block gradient, or when no step decreases the loss any more
// (converged to rounding).
func Newton(ctx context.Context, obj *Objective, s Settings) ([]float64, int, float64, error) {
	theta := slices.Clone(s.Start)
	P := len(theta)
	g := make([]float64, P)
	tol := 1e-10 * math.Max(s.GradScale, 1e-300)
	ne := s.Base
	mu := 1e-10 * math.Max(math.Abs(ne.vals[0]), math.Abs(ne.vals[P-1]))
	loss, err := obj.Gradient(ctx, theta, g)
	if err != nil {
		return nil, 0, 0, err
	}
	it := 0
	for ; it < s.MaxIter && num.Norm(g) > tol && (s.Deadline.IsZero() || time.Now().Before(s.Deadline)); it++ {
		d := ne.step(g, mu)
		accepted := false
		for a := 1.0; a > 1e-6; a /= 2 {
			next := make([]float64, P)
			for i := range next {
				next[i] = theta[i] + a*d[i]
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
		if num.Norm(g) > 0.25*before && (s.Deadline.IsZero() || time.Now().Before(s.Deadline)) {
			// Slow: the Newton matrix is stale; take the Hessian here
			// (not past the deadline, where the loop ends anyway: on a
			// model of 1,000 parameters it costs more than a step).
			if ne, err = HessianEig(ctx, obj.Objective, theta); err != nil {
				return nil, 0, 0, err
			}
		}
	}
	return theta, it, num.Norm(g), nil
}

// Root solves grad obj = 0 from s.Start (see the package doc); it returns
// the iterate, the iterations and the final gradient norm. It stops at a
// gradient norm of 1e-10 times the typical block gradient, at the
// iteration cap or the deadline, or when mu exceeds 1e10 times the
// largest |eigenvalue| (no step lowers |g|: a local minimum of |g| that
// is not a root).
func Root(ctx context.Context, obj *Objective, s Settings) ([]float64, int, float64, error) {
	theta := slices.Clone(s.Start)
	P := len(theta)
	g := make([]float64, P)
	tol := 1e-10 * math.Max(s.GradScale, 1e-300)
	if _, err := obj.Gradient(ctx, theta, g); err != nil {
		return nil, 0, 0, err
	}
	ne := s.Base
	scale := math.Max(math.Abs(ne.vals[0]), math.Abs(ne.vals[P-1]))
	mu := 1e-14 * scale * scale
	it := 0
	gn := make([]float64, P)
	for ; it < s.MaxIter && num.Norm(g) > tol && (s.Deadline.IsZero() || time.Now().Before(s.Deadline)); it++ {
		if it > 0 {
			var err error
			if ne, err = HessianEig(ctx, obj.Objective, theta); err != nil {
				return nil, 0, 0, err
			}
		}
		accepted := false
		for !accepted && mu <= 1e10*scale*scale {
			d := ne.rootStep(g, mu)
			for a := 1.0; a > 1e-4; a /= 2 {
				next := make([]float64, P)
				for i := range next {
					next[i] = theta[i] + a*d[i]
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
func (ne *Eig) rootStep(g []float64, mu float64) []float64 {
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

// LBFGS minimises obj from s.Start with L-BFGS (large models; s.Base is
// not used).
func LBFGS(ctx context.Context, obj *Objective, s Settings) ([]float64, int, float64, error) {
	var ferr error
	grad := make([]float64, len(s.Start))
	scale := math.Max(s.GradScale, 1e-12)
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
	set := &optimize.Settings{GradientThreshold: 1e-9 * scale, MajorIterations: s.MaxIter, Converger: &optimize.FunctionConverge{Absolute: 0, Relative: 0, Iterations: 200}}
	if !s.Deadline.IsZero() {
		set.Runtime = max(time.Until(s.Deadline), time.Millisecond)
	}
	res, err := optimize.Minimize(prob, slices.Clone(s.Start), set, &optimize.LBFGS{Store: 30})
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
