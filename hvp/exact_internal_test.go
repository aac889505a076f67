package hvp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestDampedInverse: dampedInverse inverts C + lambda I by Cholesky when
// it is positive definite and by LU when it is indefinite ((C + lambda I)
// inv = I to rounding either way), and an exactly singular matrix is an
// error; the exact factor's solve (refined on the LU path) leaves a
// residual at rounding level on an indefinite, badly conditioned matrix.
func TestDampedInverse(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 4))
	const P = 60
	sym := make([]float64, P*P)
	for i := 0; i < P; i++ {
		for j := i; j < P; j++ {
			v := r.NormFloat64()
			sym[i*P+j], sym[j*P+i] = v, v
		}
	}
	gram := make([]float64, P*P) // sym sym^T: positive semi-definite
	for i := 0; i < P; i++ {
		for j := 0; j < P; j++ {
			for k := 0; k < P; k++ {
				gram[i*P+j] += sym[i*P+k] * sym[j*P+k]
			}
		}
	}
	for _, tc := range []struct {
		name   string
		c      []float64
		lambda float64
		lu     bool
	}{
		{"definite", gram, 0.1, false},
		{"indefinite", sym, 0.01, true},
	} {
		inv, lu, err := dampedInverse(ctx, tc.c, P, tc.lambda)
		if err != nil {
			t.Fatal(err)
		}
		if lu != tc.lu {
			t.Errorf("%s: LU %v, want %v", tc.name, lu, tc.lu)
		}
		worst := 0.0
		for i := 0; i < P; i++ {
			for j := 0; j < P; j++ {
				s := tc.lambda * inv[i*P+j]
				for k := 0; k < P; k++ {
					s += tc.c[i*P+k] * inv[k*P+j]
				}
				if i == j {
					s--
				}
				worst = math.Max(worst, math.Abs(s))
			}
		}
		if worst > 1e-9 {
			t.Errorf("%s: |(C + lambda I) inv - I| = %.3g", tc.name, worst)
		}
	}
	// The zero matrix with lambda 0 is exactly singular.
	if _, _, err := dampedInverse(ctx, make([]float64, P*P), P, 0); err == nil {
		t.Error("an exactly singular matrix was inverted")
	}
	// The refined solve on the indefinite matrix, damped close to an
	// eigenvalue so that it is badly conditioned.
	f := &exactFactor{P: P, c: sym}
	w, _, ok, err := eigenSym(ctx, mat.NewSymDense(P, slices.Clone(sym)), false)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	f.lam = -w[P/2] + 1e-6
	var lu bool
	if f.invT, lu, err = dampedInverse(ctx, sym, P, f.lam); err != nil || !lu {
		t.Fatal(lu, err)
	}
	f.invT = transposeInverse(f.invT, P, lu)
	b := make([]float64, P)
	for i := range b {
		b[i] = r.NormFloat64()
	}
	residual := func(refine bool) float64 {
		f.refine = refine
		x := make([][]float64, 1)
		rep := &Report{}
		if err := f.solveAll(ctx, x, [][]float64{b}, rep); err != nil {
			t.Fatal(err)
		}
		return rep.Residuals[0]
	}
	// A backward-stable solve leaves a relative residual of about eps
	// |C + lambda I| |x| / |b| <= eps cond.
	cond := math.Max(math.Abs(w[0]+f.lam), math.Abs(w[P-1]+f.lam)) / 1e-6
	plain, refined := residual(false), residual(true)
	if refined > 1e-16*cond || refined > plain {
		t.Errorf("refined solve: relative residual %.3g (unrefined %.3g, eps cond %.3g)", refined, plain, 1e-16*cond)
	}
	t.Logf("relative residual %.3g refined, %.3g unrefined; eps cond %.3g", refined, plain, 1e-16*cond)
}
