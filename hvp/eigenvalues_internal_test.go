package hvp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestEigenvalues checks eigenvalues against gonum's mat.EigenSym
// (LAPACK's Dsyev) on random symmetric matrices of sizes around the
// reduction's block of 32 and at the paper's 481, some with a spectrum
// spread over ten orders of magnitude and negative eigenvalues, as a
// recurrent model's Hessian has: every eigenvalue within 1e-13 of the
// largest in magnitude.
func TestEigenvalues(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 5, 31, 32, 33, 65, 100, 481} {
		for _, spread := range []bool{false, true} {
			a := make([]float64, n*n)
			if spread {
				// Q diag(s) Q^T, Q from the QR factorisation of a random
				// matrix, s from -1e3 to 1e7 on a log scale.
				g := mat.NewDense(n, n, nil)
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						g.Set(i, j, r.NormFloat64())
					}
				}
				var qr mat.QR
				qr.Factorize(g)
				var q mat.Dense
				qr.QTo(&q)
				s := mat.NewDiagDense(n, nil)
				for i := 0; i < n; i++ {
					v := math.Pow(10, -3+10*r.Float64())
					if i%7 == 3 {
						v = -v / 1e4
					}
					s.SetDiag(i, v)
				}
				var m mat.Dense
				m.Product(&q, s, q.T())
				for i := 0; i < n; i++ {
					for j := i; j < n; j++ {
						v := (m.At(i, j) + m.At(j, i)) / 2
						a[i*n+j], a[j*n+i] = v, v
					}
				}
			} else {
				for i := 0; i < n; i++ {
					for j := i; j < n; j++ {
						v := r.NormFloat64()
						a[i*n+j], a[j*n+i] = v, v
					}
				}
			}
			var ref mat.EigenSym
			if !ref.Factorize(mat.NewSymDense(n, slices.Clone(a)), false) {
				t.Fatalf("n %d: mat.EigenSym failed", n)
			}
			want := ref.Values(nil)
			got, ok, err := eigenvalues(context.Background(), a, n)
			if err != nil || !ok {
				t.Fatalf("n %d: ok %v, %v", n, ok, err)
			}
			scale := math.Max(math.Abs(want[0]), math.Abs(want[n-1]))
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > 1e-13*scale {
					t.Errorf("n %d, spread %v: eigenvalue %d is %v, mat.EigenSym %v (difference %.3g of the largest)", n, spread, i, got[i], want[i], d/scale)
				}
			}
		}
	}
}
