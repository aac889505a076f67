package hvp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/lapack/gonum"
)

// TestLUInverse checks luFactor and luInverse against gonum's Dgetrf and
// Dgetri (LAPACK's pivots, the same factors and inverse up to rounding)
// and against the identity (A inv(A) = I), on random matrices of sizes
// around the blocks of 64 and at the paper's 481 parameters, and that an
// exactly singular matrix is reported.
func TestLUInverse(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	impl := gonum.Implementation{}
	for _, n := range []int{1, 3, 63, 64, 65, 130, 481} {
		a := make([]float64, n*n)
		for i := range a {
			a[i] = r.NormFloat64()
		}
		want, wpiv := slices.Clone(a), make([]int, n)
		if !impl.Dgetrf(n, n, want, n, wpiv) {
			t.Fatalf("n %d: Dgetrf failed", n)
		}
		got, gpiv := slices.Clone(a), make([]int, n)
		if !luFactor(n, got, gpiv) {
			t.Fatalf("n %d: luFactor failed", n)
		}
		if !slices.Equal(gpiv, wpiv) {
			t.Fatalf("n %d: pivots %v, Dgetrf's %v", n, gpiv, wpiv)
		}
		for i := range got {
			if d := math.Abs(got[i] - want[i]); d > 1e-10*(1+math.Abs(want[i])) {
				t.Fatalf("n %d: factor entry %d is %v, Dgetrf's %v", n, i, got[i], want[i])
			}
		}
		work := make([]float64, 64*n)
		if !impl.Dgetri(n, want, n, wpiv, work, len(work)) || !luInverse(n, got, gpiv) {
			t.Fatalf("n %d: inverse failed", n)
		}
		worst := 0.0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for k := 0; k < n; k++ {
					s += a[i*n+k] * got[k*n+j]
				}
				if i == j {
					s--
				}
				worst = math.Max(worst, math.Abs(s))
				if d := math.Abs(got[i*n+j] - want[i*n+j]); d > 1e-9*(1+math.Abs(want[i*n+j])) {
					t.Fatalf("n %d: inverse entry (%d, %d) is %v, Dgetri's %v", n, i, j, got[i*n+j], want[i*n+j])
				}
			}
		}
		if worst > 1e-9 {
			t.Errorf("n %d: |A inv - I| = %.3g", n, worst)
		}
	}
	sing := make([]float64, 100*100)
	for i := range sing {
		sing[i] = float64(i % 100) // equal rows
	}
	if luFactor(100, sing, make([]int, 100)) {
		t.Error("an exactly singular matrix was factorised")
	}
}
