package interval

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantileRules pins the ranks of docs/design.md, section 5.3, at the
// edges: m too small for a finite limit, exact products such as 0.9 × 10,
// and ties.
func TestQuantileRules(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		alpha      float64
		m          int
		upRank     int
		lowRank    int
		lower, upp float64 // limits for V- = V+ = 1..m
	}{
		{0.1, 1, 2, 0, -inf, inf},
		{0.1, 8, 9, 0, -inf, inf}, // (0.9)(9) = 8.1 -> 9 > m: infinite; 0.9 -> 0: infinite
		{0.1, 9, 9, 1, 1, 9},      // (0.9)(10) = 9 exactly, (0.1)(10) = 1 exactly
		{0.1, 10, 10, 1, 1, 10},   // 9.9 -> 10; 1.1 -> 1
		{0.1, 19, 18, 2, 2, 18},   // 18 exactly; 2 exactly
		{0.05, 19, 19, 1, 1, 19},  // 19 exactly (0.95 is just below in binary); 1 exactly
		{0.05, 18, 19, 0, -inf, inf},
		{0.25, 3, 3, 1, 1, 3},
		{0.2, 4, 4, 1, 1, 4},
	} {
		if got := UpperRank(tc.alpha, tc.m); got != tc.upRank {
			t.Errorf("alpha %g m %d: upper rank %d, want %d", tc.alpha, tc.m, got, tc.upRank)
		}
		if got := LowerRank(tc.alpha, tc.m); got != tc.lowRank {
			t.Errorf("alpha %g m %d: lower rank %d, want %d", tc.alpha, tc.m, got, tc.lowRank)
		}
		v := make([]float64, tc.m)
		for i := range v {
			v[i] = float64(tc.m - i) // reversed, so the selection must sort
		}
		lo, up := JackknifePlus(tc.alpha, slices.Clone(v), slices.Clone(v))
		if lo != tc.lower || up != tc.upp {
			t.Errorf("alpha %g m %d: limits [%g, %g], want [%g, %g]", tc.alpha, tc.m, lo, up, tc.lower, tc.upp)
		}
	}
	// Ties: the k-th smallest with repeated values.
	v := []float64{3, 1, 2, 2, 2, 5, 1}
	for k, want := range []float64{1, 1, 2, 2, 2, 3, 5} {
		if got := KthSmallest(slices.Clone(v), k+1); got != want {
			t.Errorf("ties: %d-th smallest %g, want %g", k+1, got, want)
		}
	}
	// KthSmallest agrees with sorting on random data with many ties.
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(60)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(7))
		}
		s := slices.Sorted(slices.Values(v))
		k := 1 + r.IntN(n)
		if got := KthSmallest(slices.Clone(v), k); got != s[k-1] {
			t.Fatalf("%v: %d-th smallest %g, want %g", v, k, got, s[k-1])
		}
	}
}

// BenchmarkKthSmallest selects the 901st of 1000 values, on fresh data
// each time (repeating one slice would train the branch predictor).
func BenchmarkKthSmallest(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const N = 512
	data := make([][]float64, N)
	for i := range data {
		data[i] = make([]float64, 1000)
		for j := range data[i] {
			data[i][j] = r.NormFloat64()
		}
	}
	w := make([]float64, 1000)
	i := 0
	for b.Loop() {
		copy(w, data[i%N])
		i++
		KthSmallest(w, 901)
	}
}

// TestKthSmallestAgainstSort: selection agrees with sorting on slices long
// enough to be partitioned, with and without heavy ties.
func TestKthSmallestAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 3000; trial++ {
		n := 1 + r.IntN(300)
		v := make([]float64, n)
		levels := 1 + r.IntN(50)
		for i := range v {
			v[i] = float64(r.IntN(levels))
			if trial%2 == 0 {
				v[i] = r.NormFloat64()
			}
		}
		s := slices.Sorted(slices.Values(v))
		k := 1 + r.IntN(n)
		if got := KthSmallest(slices.Clone(v), k); got != s[k-1] {
			t.Fatalf("n=%d k=%d: got %g want %g", n, k, got, s[k-1])
		}
	}
}

// TestJackknifePlusNaN: NaN values count as unbounded on their side, and
// the selection ends (a NaN in the quickselect used to loop for ever).
func TestJackknifePlusNaN(t *testing.T) {
	nan := math.NaN()
	vm := []float64{1, nan, 2, 3, nan, 0, 4, 5, 6, 7}
	vp := []float64{3, nan, 4, 5, 10, 2, 6, 7, 8, 9}
	lo, up := JackknifePlus(0.2, vm, vp)
	// m = 10, alpha 0.2: upper is the 9th smallest of V+ (one +Inf among
	// ten: 10), lower the 2nd smallest of V- (two -Inf: -Inf).
	if !math.IsInf(lo, -1) || up != 10 {
		t.Errorf("limits %g, %g; want -Inf, 10", lo, up)
	}
}

// TestKthSmallestInfinite: selection among many +Inf values (unbounded
// leave-out residuals) ends and returns +Inf where the rank falls on
// them; it used to loop for ever when a pivot was +Inf.
func TestKthSmallestInfinite(t *testing.T) {
	v := make([]float64, 40)
	for i := range v {
		v[i] = math.Inf(1)
	}
	v[3], v[17] = 1, 2
	if got := KthSmallest(slices.Clone(v), 2); got != 2 {
		t.Errorf("2nd smallest %g, want 2", got)
	}
	if got := KthSmallest(slices.Clone(v), 30); !math.IsInf(got, 1) {
		t.Errorf("30th smallest %g, want +Inf", got)
	}
}

// TestMinResiduals: ceil((1-alpha)(m+1)) <= m from m = ceil(1/alpha) - 1
// on, worked by hand at four levels.
func TestMinResiduals(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		want  int
	}{{0.1, 9}, {0.05, 19}, {0.2, 4}, {0.3, 3}} {
		if got := MinResiduals(c.alpha); got != c.want {
			t.Errorf("MinResiduals(%g) = %d, want %d", c.alpha, got, c.want)
		}
	}
}
