package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmStrided checks GemmStrided on blocks of wider matrices against
// the naive triple loop on the blocks copied out, setting and adding, on
// every tier, and that it writes nothing outside C's block.
func TestGemmStrided(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, m := range []int{1, 3, 4, 9, 24} {
			for _, n := range []int{1, 4, 5, 16, 24, 25} {
				for _, k := range []int{0, 1, 7, 40} {
					for _, add := range []bool{false, true} {
						lda, ldb, ldc := k+3, n+2, n+5
						a := make([]float64, m*lda+1)
						b := make([]float64, k*ldb+1)
						c := make([]float64, m*ldc+1)
						for _, v := range [][]float64{a, b, c} {
							for i := range v {
								v[i] = r.NormFloat64()
							}
						}
						ac, bc, cc := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
						for i := range m {
							copy(ac[i*k:(i+1)*k], a[i*lda:])
							copy(cc[i*n:(i+1)*n], c[i*ldc:])
						}
						for p := range k {
							copy(bc[p*n:(p+1)*n], b[p*ldb:])
						}
						beta := 0.0
						if add {
							beta = 1
						}
						want := naiveGemm(false, false, m, n, k, ac, bc, beta, cc)
						before := append([]float64(nil), c...)
						GemmStrided(m, n, k, a, lda, b, ldb, c, ldc, add)
						for i := range c {
							row, col := i/ldc, i%ldc
							if row < m && col < n {
								w := want[row*n+col]
								if !(math.Abs(c[i]-w) <= 1e-13*(1+math.Abs(w))) {
									t.Fatalf("m=%d n=%d k=%d add=%v: C[%d][%d] = %g, want %g", m, n, k, add, row, col, c[i], w)
								}
							} else if c[i] != before[i] {
								t.Fatalf("m=%d n=%d k=%d add=%v: wrote element %d outside C's block", m, n, k, add, i)
							}
						}
					}
				}
			}
		}
	})
}
