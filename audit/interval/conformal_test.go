package interval

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// conformalRef is the conformal quantile by its definition, in exact
// integer arithmetic: the smallest score q with #(scores <= q) >=
// (1 - alpha)(m + 1), alpha = num/den; +Inf when no score qualifies.
func conformalRef(num, den int, scores []float64) float64 {
	m := len(scores)
	best := math.Inf(1)
	for _, q := range scores {
		c := 0
		for _, v := range scores {
			if v <= q {
				c++
			}
		}
		if c*den >= (den-num)*(m+1) && q < best {
			best = q
		}
	}
	return best
}

// TestConformalQuantileBruteForce: UpperQuantile, the conformal quantile
// of split conformal, of the conformalized jackknife+ and (at alpha / L)
// of Bonferroni, agrees with the definition on random scores with and
// without ties, at levels whose products (1 - alpha)(m + 1) are often
// whole numbers.
func TestConformalQuantileBruteForce(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 12))
	levels := [][2]int{{1, 10}, {1, 20}, {1, 4}, {1, 5}, {3, 10}, {1, 100}, {1, 3}}
	for trial := 0; trial < 4000; trial++ {
		m := rnd.IntN(120)
		scores := make([]float64, m)
		for i := range scores {
			if trial%2 == 0 {
				scores[i] = float64(rnd.IntN(6)) // ties
			} else {
				scores[i] = rnd.ExpFloat64()
			}
		}
		lv := levels[rnd.IntN(len(levels))]
		L := 1 + rnd.IntN(12) // Bonferroni divisor
		num, den := lv[0], lv[1]*L
		alpha := float64(lv[0]) / float64(lv[1]) / float64(L)
		want := conformalRef(num, den, scores)
		before := slices.Clone(scores)
		if got := UpperQuantile(alpha, scores); got != want {
			t.Fatalf("alpha %d/%d m %d: got %g, want %g (scores %v)", num, den, m, got, want, scores)
		}
		if !slices.Equal(before, scores) {
			t.Fatal("UpperQuantile reordered its argument")
		}
	}
	// MinValues is the smallest m with a finite quantile.
	for _, lv := range levels {
		for L := 1; L <= 12; L++ {
			alpha := float64(lv[0]) / float64(lv[1]) / float64(L)
			m := MinValues(alpha)
			ones := func(n int) []float64 { return slices.Repeat([]float64{1}, n) }
			if math.IsInf(conformalRef(lv[0], lv[1]*L, ones(m)), 1) || (m > 0 && !math.IsInf(conformalRef(lv[0], lv[1]*L, ones(m-1)), 1)) {
				t.Errorf("alpha %g: MinValues %d is not the smallest m with a finite quantile", alpha, m)
			}
		}
	}
}

// TestCJScore checks the score of the conformalized jackknife+ against its
// definition (the smallest s whose member covers y) on random intervals,
// the nesting of the family, and the edge cases: unbounded sides, sides
// of width 0, a limit on the wrong side of the prediction.
func TestCJScore(t *testing.T) {
	inf := math.Inf(1)
	in := func(y, lo, up float64) bool { return lo <= y && y <= up }
	rnd := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20000; trial++ {
		f := rnd.NormFloat64()
		lo, up := f-rnd.ExpFloat64(), f+rnd.ExpFloat64()
		switch trial % 7 {
		case 1:
			lo = math.Inf(-1)
		case 2:
			up = inf
		case 3:
			lo = f
		case 4:
			up = f - 0.1 // below the prediction: width 0 above
		}
		y := f + 2*rnd.NormFloat64()
		s := CJScore(f, lo, up, y)
		if s < 0 || math.IsNaN(s) {
			t.Fatalf("score %g", s)
		}
		if math.IsInf(s, 1) {
			// No finite member covers y; the whole line does.
			if a, b := CJLimits(f, lo, up, 1e300); in(y, a, b) {
				t.Fatalf("f %g [%g, %g] y %g: score +Inf, but s = 1e300 covers", f, lo, up, y)
			}
			if a, b := CJLimits(f, lo, up, inf); !(math.IsInf(a, -1) && math.IsInf(b, 1)) {
				t.Fatal("I(+Inf) is not the whole line")
			}
			continue
		}
		// Covered at s (up to one rounding) and not below it.
		if a, b := CJLimits(f, lo, up, s*(1+1e-12)+1e-300); !in(y, a, b) {
			t.Fatalf("f %g [%g, %g] y %g: score %g does not cover", f, lo, up, y, s)
		}
		if s > 0 {
			if a, b := CJLimits(f, lo, up, s*(1-1e-9)); in(y, a, b) {
				t.Fatalf("f %g [%g, %g] y %g: a smaller s than the score %g covers", f, lo, up, y, s)
			}
		}
		// Nested: a larger s gives a superset.
		s1, s2 := rnd.ExpFloat64(), rnd.ExpFloat64()
		s1, s2 = min(s1, s2), max(s1, s2)
		a1, b1 := CJLimits(f, lo, up, s1)
		a2, b2 := CJLimits(f, lo, up, s2)
		if a2 > a1 || b2 < b1 {
			t.Fatalf("not nested: I(%g) = [%g, %g], I(%g) = [%g, %g]", s1, a1, b1, s2, a2, b2)
		}
	}
	for _, tc := range []struct{ f, lo, up, y, want float64 }{
		{0, -1, 2, 1, 0.5},
		{0, -1, 2, -3, 3},
		{0, -1, 2, 0, 0},
		{0, math.Inf(-1), 2, -100, 0},
		{0, -1, inf, 100, 0},
		{0, 0, 2, -1e-9, inf},   // width 0 below
		{0, -1, -0.5, 1, inf},   // upper below the prediction: width 0 above
		{0, 0.5, 2, -0.25, inf}, // lower above the prediction
		{1, 0, 2, 1, 0},
	} {
		if got := CJScore(tc.f, tc.lo, tc.up, tc.y); got != tc.want {
			t.Errorf("CJScore(%g, [%g, %g], %g) = %g, want %g", tc.f, tc.lo, tc.up, tc.y, got, tc.want)
		}
	}
	if a, b := CJLimits(1, 0, 3, 2); a != -1 || b != 5 {
		t.Errorf("CJLimits(1, [0, 3], 2) = [%g, %g], want [-1, 5]", a, b)
	}
	if a, b := CJLimits(1, 0, 3, 1); a != 0 || b != 3 {
		t.Errorf("s = 1 does not give the jackknife+ interval: [%g, %g]", a, b)
	}
}

// exchangeable is a point of the synthetic coverage study: a prediction
// f, a jackknife+-like interval [lo, up] of varying width and skew, and
// an outcome y whose spread follows the width (heteroscedastic).
type exchangeable struct{ f, lo, up, y float64 }

func drawPoint(rnd *rand.Rand) exchangeable {
	f := rnd.NormFloat64()
	w := math.Exp(0.5 * rnd.NormFloat64())
	p := exchangeable{f: f, lo: f - w*(0.5+rnd.Float64()), up: f + w*(0.5+rnd.Float64())}
	p.y = f + w*rnd.NormFloat64()*(0.7+0.6*rnd.Float64())
	return p
}

// coverageStudy draws, from one pool of exchangeable points, nsplit
// random calibration/test splits (m calibration points, ntest test
// points), calibrates with quantile and returns the mean test coverage
// and its standard error over the splits, for split conformal and the
// conformalized jackknife+.
func coverageStudy(seed uint64, m, ntest, nsplit int, alpha float64, quantile func(alpha float64, scores []float64) float64) (mean, se [2]float64) {
	rnd := rand.New(rand.NewPCG(seed, 1))
	pool := make([]exchangeable, 5000)
	for i := range pool {
		pool[i] = drawPoint(rnd)
	}
	idx := make([]int, len(pool))
	for i := range idx {
		idx[i] = i
	}
	var sum, sum2 [2]float64
	split, cj := make([]float64, m), make([]float64, m)
	for range nsplit {
		rnd.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for k, i := range idx[:m] {
			p := pool[i]
			split[k] = math.Abs(p.y - p.f)
			cj[k] = CJScore(p.f, p.lo, p.up, p.y)
		}
		h, s := quantile(alpha, split), quantile(alpha, cj)
		var cov [2]float64
		for _, i := range idx[m : m+ntest] {
			p := pool[i]
			if math.Abs(p.y-p.f) <= h {
				cov[0]++
			}
			if a, b := CJLimits(p.f, p.lo, p.up, s); a <= p.y && p.y <= b {
				cov[1]++
			}
		}
		for k := range cov {
			c := cov[k] / float64(ntest)
			sum[k] += c
			sum2[k] += c * c
		}
	}
	n := float64(nsplit)
	for k := range mean {
		mean[k] = sum[k] / n
		se[k] = math.Sqrt((sum2[k]/n - mean[k]*mean[k]) / (n - 1))
	}
	return mean, se
}

// TestConformalCoverage is the finite-sample guarantee as a statistical
// test: on exchangeable synthetic data (continuous scores, so no ties),
// over many random calibration/test splits of one pool, the mean test
// coverage of split conformal and of the conformalized jackknife+ lies in
// [1 - alpha, 1 - alpha + 1/(m + 1)] up to sampling error. Given the pool,
// a random split makes the scores exchangeable, so the expected coverage
// is exactly ceil((1-alpha)(m+1))/(m+1), inside that range; the test
// allows z = 4.5 standard errors of the mean over splits on each side,
// so with an unseeded generator it would fail falsely with probability
// below 1e-5 per bound (4 bounds per m). The generator is seeded, so the
// outcome is fixed. The same study with a wrong rank (the
// ceil((1-alpha) m)-th smallest, no finite-sample correction) must fail
// the lower bound: the test can detect the error it guards against.
func TestConformalCoverage(t *testing.T) {
	const alpha, z = 0.1, 4.5
	naive := func(alpha float64, v []float64) float64 {
		k := int(math.Ceil((1 - alpha) * float64(len(v))))
		return KthSmallest(slices.Clone(v), max(k, 1))
	}
	for _, m := range []int{24, 99, 9} {
		mean, se := coverageStudy(uint64(m), m, 100, 6000, alpha, UpperQuantile)
		exact := float64(UpperRank(alpha, m)) / float64(m+1)
		for k, name := range []string{"split conformal", "conformalized jackknife+"} {
			lo, hi := 1-alpha, 1-alpha+1/float64(m+1)
			t.Logf("m %d %s: mean coverage %.4f ± %.4f (exact expectation %.4f, range [%.4f, %.4f])", m, name, mean[k], se[k], exact, lo, hi)
			if mean[k] < lo-z*se[k] || mean[k] > hi+z*se[k] {
				t.Errorf("m %d %s: mean coverage %.4f ± %.4f outside [%.4f, %.4f]", m, name, mean[k], se[k], lo, hi)
			}
		}
	}
	// m = 24: the uncorrected rank gives 22/25 = 0.88 on average.
	mean, se := coverageStudy(24, 24, 100, 6000, alpha, naive)
	for k := range mean {
		if !(mean[k] < 1-alpha-z*se[k]) {
			t.Errorf("the study does not detect the uncorrected rank: mean coverage %.4f ± %.4f", mean[k], se[k])
		}
	}
}
