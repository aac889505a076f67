package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTanh holds the vectorised tanh to math.Tanh: at most 4 units in the
// last place apart, exact at 0 and ±1, NaN for NaN, over random values of
// every magnitude and the edges of its branches.
func TestTanh(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var xs []float64
	for _, v := range []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 1e-20, 1e-8, 0.3, 0.624999999, 0.625, 0.6250000001, 1, 5, 18.7, 19.1, 20, 22, 40, 100, 1e300, math.Inf(1), math.Inf(-1), math.NaN()} {
		xs = append(xs, v, -v)
	}
	for i := 0; i < 200000; i++ {
		xs = append(xs, r.NormFloat64()*math.Pow(10, float64(r.IntN(6)-3)))
	}
	for _, tier := range Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			defer Use(tier)()
			testTanh(t, xs)
		})
	}
	if Best() == AVX512 {
		// The AVX2 kernel must agree bit for bit with the AVX-512 one.
		got := make([]float64, len(xs))
		Tanh(got, xs)
		restore := Use(AVX2)
		got2 := make([]float64, len(xs))
		Tanh(got2, xs)
		restore()
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(got2[i]) && !(math.IsNaN(got[i]) && math.IsNaN(got2[i])) {
				t.Fatalf("tanh(%.17g): AVX-512 %.17g, AVX2 %.17g", xs[i], got[i], got2[i])
			}
		}
	}
}

// TestTanhFourCopies: the kernel of four interleaved copies gives
// tanhAVX512's results bit for bit, at every length about its 32-value
// step (Tanh hands it the multiple of 32 and the rest to tanhAVX512), on
// values of every magnitude, the branch edges, ±0, ±Inf and NaN.
func TestTanhFourCopies(t *testing.T) {
	if Best() != AVX512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(4, 4))
	xs := []float64{0, math.Copysign(0, -1), 0.625, -0.625, 0.6249999999999999, 19.1, -40, 1e300, math.Inf(1), math.Inf(-1), math.NaN()}
	for len(xs) < 4096 {
		xs = append(xs, r.NormFloat64()*math.Pow(10, float64(r.IntN(7)-4)))
	}
	want := make([]float64, len(xs))
	tanhAVX512(want, xs)
	for _, n := range []int{0, 8, 24, 32, 40, 56, 64, 96, 1040, 4096} {
		got := make([]float64, n)
		tanh4AVX512(got, xs[:n])
		for i := 0; i < n&^31; i++ {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("length %d: tanh(%.17g): four copies %.17g, tanhAVX512 %.17g", n, xs[i], got[i], want[i])
			}
		}
		for i := n &^ 31; i < n; i++ {
			if got[i] != 0 {
				t.Fatalf("length %d: element %d written (%g), beyond the multiple of 32", n, i, got[i])
			}
		}
	}
}

// testTanh compares Tanh on the current tier with math.Tanh.
func testTanh(t *testing.T, xs []float64) {
	got := make([]float64, len(xs))
	Tanh(got, xs)
	worst := 0.0
	for i, x := range xs {
		want := math.Tanh(x)
		g := got[i]
		switch {
		case math.IsNaN(want):
			if !math.IsNaN(g) {
				t.Fatalf("tanh(%g) = %g, want NaN", x, g)
			}
			continue
		case want == 0 || math.Abs(want) == 1:
			if g != want {
				t.Fatalf("tanh(%g) = %.17g, want exactly %g", x, g, want)
			}
			continue
		}
		ulp := math.Abs(math.Nextafter(want, math.Inf(1)) - want)
		if d := math.Abs(g-want) / ulp; d > worst {
			worst = d
		}
		if math.Abs(g-want) > 4*ulp {
			t.Fatalf("tanh(%.17g) = %.17g, math.Tanh %.17g (%.1f ulp)", x, g, want, math.Abs(g-want)/ulp)
		}
	}
	t.Logf("largest difference from math.Tanh: %.1f ulp", worst)
}

func BenchmarkTanh(b *testing.B) {
	src := make([]float64, 20000)
	for i := range src {
		src[i] = float64(i%400)/100 - 2
	}
	dst := make([]float64, len(src))
	for b.Loop() {
		Tanh(dst, src)
	}
}
