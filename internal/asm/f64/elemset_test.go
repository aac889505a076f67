package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSetFormsMatchAccumulation checks TanhVJPTangentSet and SetSum
// against TanhVJPTangent and AddTo on a zeroed destination, bit for bit
// (signed zeros included), on every tier, over a stale destination.
func TestSetFormsMatchAccumulation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tier := range Tiers() {
		restore := Use(tier)
		for _, n := range []int{0, 1, 7, 8, 9, 23, 64, 2003} {
			y, g, dg, dx := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range n {
				y[i], g[i], dg[i], dx[i] = math.Tanh(r.NormFloat64()), r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
				switch i % 5 {
				case 0: // a negative zero product
					g[i], dg[i] = 0, math.Copysign(0, -1)
				case 1:
					dx[i], dg[i] = 0, math.Copysign(0, -1)
				}
			}
			want, got := make([]float64, n), make([]float64, n)
			for i := range got {
				got[i] = math.NaN() // stale contents must not be read
			}
			TanhVJPTangent(want, y, g, dg, dx)
			TanhVJPTangentSet(got, y, g, dg, dx)
			sameBits(t, tier, "TanhVJPTangentSet", got, want)

			want, got = make([]float64, n), make([]float64, n)
			for i := range got {
				got[i] = math.NaN()
			}
			AddTo(want, dg)
			SetSum(got, dg)
			sameBits(t, tier, "SetSum", got, want)
		}
		restore()
	}
}

func sameBits(t *testing.T, tier Tier, name string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%v: %s: element %d of %d is %v (bits %x), want %v (bits %x)", tier, name, i, len(want), got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
		}
	}
}
