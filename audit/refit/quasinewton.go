package refit

import (
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// quasiNewtonMemory is the number of past steps whose secant pairs
// correct the preconditioner.
const quasiNewtonMemory = 30

// QuasiNewton minimises a smooth function F of delta from delta = 0
// (value and grad evaluate F and its gradient) by preconditioned L-BFGS
// (Nocedal and Wright, algorithm 7.4) with the preconditioner as the
// initial inverse Hessian: direction d_k = -H_k grad F(delta_k), with H_0
// = precond and the last quasiNewtonMemory secant pairs (s, y) correcting
// it, and a backtracking (Armijo) line search from the full step. first
// is precond(-grad F(0)), the first direction. With precond the leverage
// solve (C - C_b)^-1 and F the tilted leave-block-out objective, the
// first full step is the one-step Newton estimate, and the secant pairs
// learn what the Gauss-Newton curvature at theta_hat misses (the
// Hessian's second-order part, its change along the path). It stops when
// a step |s_k| is at most relTol |first| (converged) or after
// maxSteps steps, counting the first, or when the line search finds no
// decrease (at the minimum to rounding: converged when the step was
// already below the tolerance's square root, else not). It returns the
// last iterate and the number of steps taken.
func QuasiNewton(value func([]float64) (float64, error), grad func(delta, g []float64) (float64, error),
	precond func([]float64) ([]float64, error), first []float64, maxSteps int, relTol float64) (delta []float64, steps int, converged bool, err error) {
	tol := relTol * num.Norm(first)
	P := len(first)
	if tol == 0 || maxSteps <= 1 {
		return first, 1, tol == 0, nil
	}
	x := make([]float64, P)
	g := make([]float64, P)
	fx, err := grad(x, g)
	if err != nil {
		return nil, 0, false, err
	}
	var ss, ys [][]float64
	var rho []float64
	d := first
	for steps = 0; steps < maxSteps; steps++ {
		if steps > 0 {
			// Two-loop recursion: d = -H g.
			q := slices.Clone(g)
			alpha := make([]float64, len(ss))
			for j := len(ss) - 1; j >= 0; j-- {
				alpha[j] = rho[j] * num.Dot(ss[j], q)
				num.AddScaled(q, -alpha[j], ys[j])
			}
			r, err := precond(q)
			if err != nil {
				return nil, 0, false, err
			}
			for j := range ss {
				beta := rho[j] * num.Dot(ys[j], r)
				num.AddScaled(r, alpha[j]-beta, ss[j])
			}
			for i := range r {
				r[i] = -r[i]
			}
			d = r
			if num.Dot(d, g) >= 0 {
				// Not a descent direction (curvature pairs gone stale):
				// restart from the preconditioner alone.
				ss, ys, rho = nil, nil, nil
				ng := slices.Clone(g)
				for i := range ng {
					ng[i] = -ng[i]
				}
				if d, err = precond(ng); err != nil {
					return nil, 0, false, err
				}
			}
		}
		gd := num.Dot(g, d)
		a, next := 1.0, []float64(nil)
		for ; a > 1e-10; a /= 2 {
			trial := slices.Clone(x)
			num.AddScaled(trial, a, d)
			v, err := value(trial)
			if err != nil {
				return nil, 0, false, err
			}
			if v <= fx+1e-4*a*gd {
				next = trial
				break
			}
		}
		if next == nil {
			return x, steps, a*num.Norm(d) <= math.Sqrt(tol*num.Norm(first)), nil
		}
		gn := make([]float64, P)
		if fx, err = grad(next, gn); err != nil {
			return nil, 0, false, err
		}
		s, y := slices.Clone(next), slices.Clone(gn)
		num.AddScaled(s, -1, x) // next - x, exactly
		num.AddScaled(y, -1, g)
		if sy := num.Dot(s, y); sy > 0 {
			ss, ys, rho = append(ss, s), append(ys, y), append(rho, 1/sy)
			if len(ss) > quasiNewtonMemory {
				ss, ys, rho = ss[1:], ys[1:], rho[1:]
			}
		}
		x, g = next, gn
		if num.Norm(s) <= tol {
			return x, steps + 1, true, nil
		}
	}
	return x, steps, false, nil
}
