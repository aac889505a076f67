package hvp

import (
	"math"
	"testing"
)

// TestTridiagonalEigen checks the eigenpairs against the closed form of a
// Toeplitz tridiagonal matrix (diagonal a, off-diagonal b): eigenvalues
// a + 2b cos(j pi/(n+1)), j = 1..n, with eigenvectors sin(i j pi/(n+1)).
func TestTridiagonalEigen(t *testing.T) {
	const n, a, b = 7, 2.5, -0.75
	alpha := make([]float64, n)
	beta := make([]float64, n) // beta[n-1] is not read
	for j := range alpha {
		alpha[j], beta[j] = a, b
	}
	beta[n-1] = math.NaN()
	vals, vecs, ok := TridiagonalEigen(alpha, beta)
	if !ok {
		t.Fatal("not converged")
	}
	for e, v := range vals {
		// Ascending: b < 0, so j = e+1 gives the smallest first.
		j := float64(e + 1)
		if want := a + 2*b*math.Cos(j*math.Pi/(n+1)); math.Abs(v-want) > 1e-13 {
			t.Errorf("value %d: %.16g, want %.16g", e, v, want)
		}
		// The column, up to sign, is the normalised sin(i j pi/(n+1)).
		norm := math.Sqrt(float64(n+1) / 2)
		sign := math.Copysign(1, vecs.At(0, e))
		for i := 0; i < n; i++ {
			want := math.Sin(float64(i+1)*j*math.Pi/(n+1)) / norm
			if got := sign * vecs.At(i, e); math.Abs(got-want) > 1e-12 {
				t.Errorf("vector %d, row %d: %.16g, want %.16g", e, i, got, want)
			}
		}
	}
}
