package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatMulEntries: on every tier, each entry equals MatMul's bit for
// bit, for shapes with and without the kernels' remainders (m and n not
// multiples of 4), with and without the parallel split of the rows.
func TestMatMulEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 9))
	for _, tier := range Tiers() {
		restore := Use(tier)
		for _, sh := range [][3]int{{7, 5, 3}, {9, 32, 200}, {2050, 33, 200}, {4, 4, 1}, {3, 2, 17}, {13, 1, 40}} {
			m, n, k := sh[0], sh[1], sh[2]
			a, b := make([]float64, m*k), make([]float64, k*n)
			for i := range a {
				a[i] = r.NormFloat64()
			}
			for i := range b {
				b[i] = r.NormFloat64()
			}
			c := make([]float64, m*n)
			MatMul(false, false, m, n, k, a, b, c)
			rows := make([]int32, m)
			for i := range rows {
				rows[i] = int32(m - 1 - i)
			}
			col, out := make([]float64, k), make([]float64, m)
			for j := 0; j < n; j++ {
				for p := range col {
					col[p] = b[p*n+j]
				}
				MatMulEntries(m, n, k, a, rows, j, col, out)
				for t2, i := range rows {
					if math.Float64bits(out[t2]) != math.Float64bits(c[int(i)*n+j]) {
						t.Fatalf("%v, %d×%d×%d: entry (%d, %d) %v, MatMul %v", tier, m, n, k, i, j, out[t2], c[int(i)*n+j])
					}
				}
			}
		}
		restore()
	}
}
