package refit

import (
	"testing"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// TestQuasiNewtonQuartic: the preconditioned L-BFGS of the Newton
// iteration minimises F(x) = x.A x/2 - b.x + sum x_i^4/4 (A positive
// definite, 6 × 6) from 0 with a preconditioner (diag A)^-1 that ignores
// both A's off-diagonal part and the quartic term: it stops as converged,
// its gradient there is below 1e-3 of the one at 0 (the step tolerance
// is 1e-4 of the first step), and it stops at the
// step cap, not converged, when given 3 steps.
func TestQuasiNewtonQuartic(t *testing.T) {
	const n = 6
	A := make([][]float64, n)
	b := make([]float64, n)
	for i := range A {
		A[i] = make([]float64, n)
		for j := range A[i] {
			A[i][j] = 0.4 / float64(1+i+j)
		}
		A[i][i] += 1 + float64(i)
		b[i] = 2 * float64(i%3+1)
	}
	gradF := func(x, g []float64) float64 {
		v := 0.0
		for i := range x {
			g[i] = x[i]*x[i]*x[i] - b[i]
			for j := range x {
				g[i] += A[i][j] * x[j]
				v += x[i] * A[i][j] * x[j] / 2
			}
			v += x[i]*x[i]*x[i]*x[i]/4 - b[i]*x[i]
		}
		return v
	}
	value := func(x []float64) (float64, error) { return gradF(x, make([]float64, n)), nil }
	grad := func(x, g []float64) (float64, error) { return gradF(x, g), nil }
	precond := func(g []float64) ([]float64, error) {
		out := make([]float64, n)
		for i := range g {
			out[i] = g[i] / A[i][i]
		}
		return out, nil
	}
	g0 := make([]float64, n)
	gradF(make([]float64, n), g0)
	for i := range g0 {
		g0[i] = -g0[i]
	}
	first, _ := precond(g0)
	x, steps, conv, err := QuasiNewton(value, grad, precond, first, 50, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, n)
	gradF(x, g)
	if !conv || num.Norm(g) > 1e-3*num.Norm(g0) {
		t.Errorf("after %d steps: converged %v, gradient %.3g (at 0: %.3g)", steps, conv, num.Norm(g), num.Norm(g0))
	}
	if _, steps, conv, _ := QuasiNewton(value, grad, precond, first, 3, 1e-4); conv || steps != 3 {
		t.Errorf("capped at 3 steps: %d steps, converged %v", steps, conv)
	}
}
