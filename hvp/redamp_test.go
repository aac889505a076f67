package hvp_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// TestRedamp: a factorisation re-damped to rho' solves exactly as
// Factorize at rho' does (bit for bit, and its report the same), and its
// solutions satisfy (C + lambda' I) x = b with C formed densely; for the
// exact method (Gauss-Newton and the Hessian) and the dual one. CG
// cannot be re-damped.
func TestRedamp(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "rnn_tanh_1l_bf")
	ex, theta := fixtureObjective(t, fx, hvp.SquaredError, 21)
	dual, dtheta := dualData(t, 4, hvp.SquaredError, 0.5, true)
	for _, tc := range []struct {
		name  string
		o     *hvp.Objective
		theta []float64
		opt   hvp.Options
	}{
		{"exact GN", ex, theta, hvp.Options{Method: hvp.Exact}},
		{"exact Hessian", ex, theta, hvp.Options{Method: hvp.Exact, Curvature: hvp.Hessian}},
		{"dual", dual, dtheta, hvp.Options{Method: hvp.Dual}},
	} {
		P := len(tc.theta)
		rhs := rhsVectors(P, 3, 4)
		c, err := tc.o.Dense(ctx, tc.opt.Curvature, tc.theta)
		if err != nil {
			t.Fatal(err)
		}
		opt := tc.opt
		opt.Damping = 0.01
		f, _, err := hvp.Factorize(ctx, tc.o, tc.theta, &opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, rho := range []float64{0.1, 0.001} {
			opt.Damping = rho
			fw, wrep, err := hvp.Factorize(ctx, tc.o, tc.theta, &opt)
			if err != nil {
				t.Fatal(err)
			}
			fr, rep, err := f.Redamp(ctx, rho)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Rho != rho || rep.Lambda != wrep.Lambda || rep.NegativeEigs != wrep.NegativeEigs || rep.MinEig != wrep.MinEig || rep.MaxEig != wrep.MaxEig || rep.Trace != wrep.Trace {
				t.Errorf("%s rho %g: report %+v, Factorize's %+v", tc.name, rho, rep, wrep)
			}
			want, got := make([][]float64, len(rhs)), make([][]float64, len(rhs))
			if err := fw.SolveAll(ctx, want, rhs); err != nil {
				t.Fatal(err)
			}
			if err := fr.SolveAll(ctx, got, rhs); err != nil {
				t.Fatal(err)
			}
			for j := range rhs {
				if !slices.Equal(got[j], want[j]) {
					t.Errorf("%s rho %g rhs %d: the re-damped solve differs from Factorize's (rel %.2g)", tc.name, rho, j, relErr(got[j], want[j], 1e-300))
				}
				res := 0.0
				for i := range tc.theta {
					s := rep.Lambda * got[j][i]
					for k := range tc.theta {
						s += c.At(i, k) * got[j][k]
					}
					res += (s - rhs[j][i]) * (s - rhs[j][i])
				}
				if math.Sqrt(res) > 1e-8*norm(rhs[j]) {
					t.Errorf("%s rho %g rhs %d: residual %.3g against the dense curvature", tc.name, rho, j, math.Sqrt(res))
				}
			}
		}
	}
	f, _, err := hvp.Factorize(ctx, ex, theta, &hvp.Options{Method: hvp.CG})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Redamp(ctx, 0.1); err == nil {
		t.Error("a CG factorisation was re-damped")
	}
}
