package table

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// gradVectors are n random vectors of P floats over a wide range of
// magnitudes and both signs, with cancellations: sums whose plain
// floating-point value depends on the order.
func gradVectors(rng *rand.Rand, n, P int) [][]float64 {
	vs := make([][]float64, n)
	for k := range vs {
		v := make([]float64, P)
		for i := range v {
			v[i] = (rng.Float64() - 0.5) * math.Ldexp(1, rng.IntN(80)-40)
			if rng.IntN(7) == 0 {
				v[i] = 0
			}
		}
		vs[k] = v
	}
	// Huge terms that cancel, so that the small ones decide the sum.
	for i := 0; i < P; i += 3 {
		vs[0][i] = 1e30
		vs[n-1][i] = -1e30
	}
	return vs
}

// TestGradientSumExact checks Round against math/big: the sum computed
// exactly (2000-bit floats hold every partial sum of these values) and
// rounded once to the nearest float64, ties to even.
func TestGradientSumExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, P = 200, 57
	vs := gradVectors(rng, n, P)
	s := NewGradientSum(P)
	for _, v := range vs {
		if err := s.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	got := s.Round(nil)
	plainDiffers := 0
	for i := range P {
		exact := new(big.Float).SetPrec(2000)
		plain := 0.0
		for _, v := range vs {
			exact.Add(exact, new(big.Float).SetPrec(2000).SetFloat64(v[i]))
			plain += v[i]
		}
		want, _ := exact.Float64()
		if math.Float64bits(got[i]) != math.Float64bits(want) {
			t.Errorf("coordinate %d: %v, the exact sum rounds to %v", i, got[i], want)
		}
		if plain != want {
			plainDiffers++
		}
	}
	if plainDiffers == 0 {
		t.Error("the plain sums equal the exact ones everywhere: the test data do not test exactness")
	}
}

// TestGradientSumOrder: the rounded sum is the same bits whatever the
// order of the vectors and however they are split into partial sums
// that are merged, encoded and decoded, or passed on as Vectors; and
// ties round to even.
func TestGradientSumOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, P = 300, 41
	vs := gradVectors(rng, n, P)
	ref := NewGradientSum(P)
	for _, v := range vs {
		ref.Add(v)
	}
	want := ref.Round(nil)
	for trial := range 5 {
		perm := rng.Perm(n)
		parts := make([]*GradientSum, 1+rng.IntN(20))
		for i := range parts {
			parts[i] = NewGradientSum(P)
		}
		for _, k := range perm {
			parts[rng.IntN(len(parts))].Add(vs[k])
		}
		total := NewGradientSum(P)
		for j, ps := range parts {
			switch j % 3 {
			case 0:
				if err := total.Merge(ps); err != nil {
					t.Fatal(err)
				}
			case 1:
				if err := total.Add(ps.Vectors()); err != nil {
					t.Fatal(err)
				}
			default:
				b, err := ps.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				back := &GradientSum{}
				if err := back.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				total.Merge(back)
			}
		}
		got := total.Round(nil)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("trial %d, coordinate %d: %v, in order %v", trial, i, got[i], want[i])
			}
		}
	}
	// 1 + 2^-53 is halfway between 1 and its successor: ties to even
	// give 1, and a tiny positive third term breaks the tie upwards.
	tie := NewGradientSum(2)
	tie.Add([]float64{1, 1})
	tie.Add([]float64{0x1p-53, 0x1p-53})
	tie.Add([]float64{0, 0x1p-200})
	if got := tie.Round(nil); got[0] != 1 || got[1] != math.Nextafter(1, 2) {
		t.Errorf("ties: %v, want [1 %v]", got, math.Nextafter(1, 2))
	}
}

// TestGradientSumSpecial: Inf and NaN propagate as in a plain sum.
func TestGradientSumSpecial(t *testing.T) {
	s := NewGradientSum(4)
	s.Add([]float64{math.Inf(1), math.Inf(1), math.NaN(), 1})
	s.Add([]float64{1, math.Inf(-1), 2, math.MaxFloat64})
	s.Add([]float64{2, 0, 3, math.MaxFloat64})
	got := s.Round(nil)
	if !math.IsInf(got[0], 1) || !math.IsNaN(got[1]) || !math.IsNaN(got[2]) || !math.IsInf(got[3], 1) {
		t.Errorf("got %v, want [+Inf NaN NaN +Inf]", got)
	}
	back := NewGradientSum(4)
	back.Add(s.Vectors())
	if g := back.Round(nil); !math.IsInf(g[0], 1) || !math.IsNaN(g[1]) || !math.IsInf(g[3], 1) {
		t.Errorf("through Vectors: %v", g)
	}
	if err := s.Add(make([]float64, 5)); err == nil {
		t.Error("5 floats added to a sum of vectors of 4: no error")
	}
}

// TestBlockGradientTakePut: a block chunk's output without its gradient
// and with it put back is the output it was.
func TestBlockGradientTakePut(t *testing.T) {
	o := &BlockChunkOut{}
	o.Recs = []BlockRecord{{A: []float64{1, 2}, S: []float64{3}, Res: []float64{4}}}
	o.GNorm, o.Norms, o.Shift = []float64{5}, []float64{6}, []float64{7}
	o.Total = []float64{8, 9, 10}
	b, _ := o.MarshalBinary()
	rest, g, err := TakeBlockGradient(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != 3 || g[2] != 10 || len(rest) >= len(b) {
		t.Fatalf("took %v, %d of %d bytes left", g, len(rest), len(b))
	}
	back, err := PutBlockGradient(rest, g)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != string(b) {
		t.Error("put back, the output differs")
	}
}

// BenchmarkGradientSumAdd adds one chunk's gradient sum of the scale
// benchmark's LSTM (P = 17,217) to the block pass's running total: at a
// million sequences the driver adds 15,625 of them.
func BenchmarkGradientSumAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	vs := make([][]float64, 64)
	for k := range vs {
		vs[k] = make([]float64, benchP)
		for i := range vs[k] {
			vs[k][i] = rng.NormFloat64() * 1e-3
		}
	}
	s := NewGradientSum(benchP)
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		s.Add(vs[i%len(vs)])
	}
	reportCPU(b, c0)
}
