package hvp_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// TestApplyManyEqualsApply checks that ApplyMany gives, bit for bit, what
// Apply gives vector by vector (the Gauss-Newton and Hessian products,
// with a ridge, one batch and many), and that Apply itself agrees with
// the dense matrix (Dense, by columns: an independent path).
func TestApplyManyEqualsApply(t *testing.T) {
	ctx := context.Background()
	whole, parts, theta := paperData(t, 30)
	P := len(theta)
	r := rand.New(rand.NewPCG(3, 4))
	v := make([][]float64, 20) // more than one pass of applyManyMax
	for j := range v {
		v[j] = randUnit(r, P)
	}
	whole.Ridge, parts.Ridge = 0.25, 0.25
	for _, o := range []*hvp.Objective{whole, parts} {
		for _, c := range []hvp.Curvature{hvp.GaussNewton, hvp.Hessian} {
			got := make([][]float64, len(v))
			for j := range got {
				got[j] = make([]float64, P)
			}
			if err := o.ApplyMany(ctx, c, theta, v, got); err != nil {
				t.Fatal(err)
			}
			m, err := parts.Dense(ctx, c, theta)
			if err != nil {
				t.Fatal(err)
			}
			for j := range v {
				want := make([]float64, P)
				if err := o.Apply(ctx, c, theta, v[j], want); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[j][i] != want[i] {
						t.Fatalf("%s, %d batches, vector %d: ApplyMany[%d] = %.17g, Apply %.17g", c, len(o.Batches), j, i, got[j][i], want[i])
					}
				}
				dense := make([]float64, P)
				for i := range dense {
					for k := range v[j] {
						dense[i] += m.At(i, k) * v[j][k]
					}
				}
				if e := relErr(want, dense, 1e-12); e > 1e-10 {
					t.Errorf("%s: Apply differs from the dense matrix by %.3g", c, e)
				}
			}
		}
	}
	if err := whole.ApplyMany(ctx, hvp.GaussNewton, theta, v, v[:1]); err == nil {
		t.Error("20 vectors and 1 result: no error")
	}
}

// TestOperatorManyKeepsForward checks the low-rank factor's operator,
// which runs every batch's forward pass once and keeps it, against
// ApplyMany bit for bit, on its first call and on later ones (the kept
// passes), for both curvatures.
func TestOperatorManyKeepsForward(t *testing.T) {
	ctx := context.Background()
	_, parts, theta := paperData(t, 12)
	parts.Ridge = 0.5
	P := len(theta)
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []hvp.Curvature{hvp.GaussNewton, hvp.Hessian} {
		op, err := (&hvp.LowRank{P: P}).OperatorMany(parts, c, theta)
		if err != nil {
			t.Fatal(err)
		}
		for call := 0; call < 3; call++ {
			v, got, want := make([][]float64, 3), make([][]float64, 3), make([][]float64, 3)
			for j := range v {
				v[j], got[j], want[j] = randUnit(r, P), make([]float64, P), make([]float64, P)
			}
			if err := op(ctx, v, got); err != nil {
				t.Fatal(err)
			}
			if err := parts.ApplyMany(ctx, c, theta, v, want); err != nil {
				t.Fatal(err)
			}
			for j := range v {
				for i := range want[j] {
					if got[j][i] != want[j][i] {
						t.Fatalf("%s, call %d, vector %d: operator[%d] = %.17g, ApplyMany %.17g", c, call, j, i, got[j][i], want[j][i])
					}
				}
			}
		}
	}
}
