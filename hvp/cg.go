package hvp

import (
	"context"
	"math"

	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// cgMethod is CG: Krylov solves with curvature-vector products,
// conjugate gradients for the Gauss-Newton matrix and MINRES (minres.go)
// for the Hessian, after a Hutchinson estimate of the trace for lambda.
type cgMethod struct{}

func (cgMethod) String() string { return "cg" }

// cgFactor is the CG method's factor: Krylov solves with
// curvature-vector products.
type cgFactor struct {
	o       *Objective
	theta   []float64
	c       Curvature
	lam     float64
	tol     float64
	maxIter int
	// progress reports right-hand sides done (Options.Progress).
	progress func(done, total int)
}

func (f *cgFactor) Dim() int { return len(f.theta) }

func (f *cgFactor) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.solveAll(ctx, x, b, nil)
}

func (cgMethod) factorize(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (factor, error) {
	P := o.numParams()
	if err := traceForIterative(ctx, o, theta, opt, rep); err != nil {
		return nil, err
	}
	tol := opt.Tol
	if tol <= 0 {
		tol = 1e-10
	}
	rep.Tol = tol
	maxIter := opt.MaxIter
	if maxIter <= 0 {
		maxIter = 10 * P
	}
	return &cgFactor{o: o, theta: theta, c: opt.Curvature, lam: rep.Lambda, tol: tol, maxIter: maxIter, progress: opt.Progress}, nil
}

func (f *cgFactor) solveAll(ctx context.Context, out, rhs [][]float64, rep *Report) error {
	P := len(f.theta)
	if err := checkSolveArgs(P, out, rhs); err != nil {
		return err
	}
	o, theta, lam, tol, maxIter := f.o, f.theta, f.lam, f.tol, f.maxIter
	apply := func(v, out []float64) error {
		if err := o.Apply(ctx, f.c, theta, v, out); err != nil {
			return err
		}
		for i := range out {
			out[i] += lam * v[i]
		}
		return nil
	}
	if rep != nil {
		rep.Iterations = make([]int, len(rhs))
		rep.Residuals = make([]float64, len(rhs))
	}
	for j, b := range rhs {
		var x []float64
		ap := make([]float64, P)
		bn := num.Norm(b)
		it := 0
		if f.c == Hessian {
			// The Hessian may be indefinite: MINRES, not CG.
			var err error
			if x, it, err = minres(apply, b, tol, maxIter); err != nil {
				return err
			}
		} else {
			x = make([]float64, P)
		}
		r := append([]float64(nil), b...)
		p := append([]float64(nil), b...)
		rr := num.Dot(r, r)
		for ; f.c != Hessian && it < maxIter && math.Sqrt(rr) > tol*bn; it++ {
			if err := apply(p, ap); err != nil {
				return err
			}
			pap := num.Dot(p, ap)
			if pap <= 0 {
				return errs.Fix([]Option{OptCurvature, OptDamping}, "%w: conjugate gradients met non-positive curvature (p·(C+λI)p = %.4g) on right-hand side %d at iteration %d", ErrIndefinite, pap, j, it)
			}
			alpha := rr / pap
			for i := range x {
				x[i] += alpha * p[i]
				r[i] -= alpha * ap[i]
			}
			rr2 := num.Dot(r, r)
			beta := rr2 / rr
			rr = rr2
			for i := range p {
				p[i] = r[i] + beta*p[i]
			}
		}
		if out[j] == nil {
			out[j] = x
		} else {
			copy(out[j], x)
		}
		if f.progress != nil {
			f.progress(j+1, len(rhs))
		}
		if rep == nil {
			continue
		}
		// The true residual, not the recursively updated one.
		if err := apply(x, ap); err != nil {
			return err
		}
		for i := range ap {
			ap[i] -= b[i]
		}
		rep.Iterations[j] = it
		rep.Residuals[j] = num.Norm(ap) / math.Max(bn, math.SmallestNonzeroFloat64)
		if it >= maxIter && rep.Residuals[j] > tol {
			rep.Unconverged++
		}
	}
	return nil
}
