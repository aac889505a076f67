package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddRows checks AddRows against one AddTo per row, bit for bit, on
// every tier, for widths around the kernel's 8-lane registers and its
// 24-column tiles.
func TestAddRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tier := range Tiers() {
		restore := Use(tier)
		for _, n := range []int{1, 3, 7, 8, 9, 16, 20, 23, 24, 25, 31, 48, 50} {
			for _, rows := range []int{0, 1, 2, 5, 37} {
				src := make([]float64, rows*n)
				for i := range src {
					src[i] = r.NormFloat64() * math.Exp(4*r.NormFloat64())
				}
				dst := make([]float64, n)
				for i := range dst {
					dst[i] = r.NormFloat64()
				}
				want := append([]float64(nil), dst...)
				for o := 0; o < len(src); o += n {
					for j := range want {
						want[j] += src[o+j]
					}
				}
				AddRows(dst, src)
				for j := range want {
					if math.Float64bits(dst[j]) != math.Float64bits(want[j]) {
						t.Fatalf("%s: n %d, rows %d: dst[%d] = %v, want %v", tier, n, rows, j, dst[j], want[j])
					}
				}
			}
		}
		restore()
	}
}
