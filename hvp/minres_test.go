package hvp

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestMINRESDense solves random symmetric indefinite systems and compares
// with a dense LU solve.
func TestMINRESDense(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	for _, n := range []int{5, 30, 120} {
		a := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				a.SetSym(i, j, r.NormFloat64())
			}
		}
		b := make([]float64, n)
		for i := range b {
			b[i] = r.NormFloat64()
		}
		apply := func(v, out []float64) error {
			var o mat.VecDense
			o.MulVec(a, mat.NewVecDense(n, v))
			copy(out, o.RawVector().Data)
			return nil
		}
		x, it, err := minres(apply, b, 1e-12, 50*n)
		if err != nil {
			t.Fatal(err)
		}
		var want mat.VecDense
		if err := want.SolveVec(a, mat.NewVecDense(n, b)); err != nil {
			t.Fatal(err)
		}
		d := 0.0
		for i := range x {
			e := x[i] - want.AtVec(i)
			d += e * e
		}
		if d > 1e-14*mat.Dot(&want, &want) {
			t.Errorf("n=%d: MINRES after %d iterations differs from LU by %.3g (relative, squared)", n, it, d/mat.Dot(&want, &want))
		}
	}
}
