package table

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// indexedCase is a block table and points on which the bounds of
// finalizeIndexed settle most blocks: shifts far smaller than the
// residuals' spread (scale), residuals on a coarse grid (ties), some
// absent (NaN) or unbounded (±Inf), a few blocks of large or non-finite
// coefficients (outliers), points that leave out a block (regular,
// outlier, or with no residual at their slot), have no slot, no target,
// or a target on the residuals' grid.
func indexedCase(seed uint64, n, nx int, scale float64) (BlockTable, []PointRecord) {
	const k, ks, F = 6, 2, 3
	r := rand.New(rand.NewPCG(seed, 7))
	w := k + ks
	t := BlockTable{N: n, K: k, KS: ks, F: F, Coef: make([]float64, n*w), Res: make([]float64, n*F)}
	for b := 0; b < n; b++ {
		c := scale
		switch r.IntN(500) {
		case 0:
			c = scale * 1000
		case 1:
			c = math.Inf(1)
		}
		for j := 0; j < w; j++ {
			t.Coef[b*w+j] = c * r.NormFloat64()
		}
		for s := 0; s < F; s++ {
			v := math.Round(math.Abs(r.NormFloat64())*64) / 64
			if r.IntN(3) == 0 {
				v = math.Abs(r.NormFloat64())
			}
			switch r.IntN(40) {
			case 0:
				v = math.NaN()
			case 1:
				v = math.Inf(1)
			case 2:
				v = 0
			}
			t.Res[b*F+s] = v
		}
	}
	pts := make([]PointRecord, nx)
	for i := range pts {
		p := PointRecord{F: math.Round(r.NormFloat64()*8) / 8, Forecast: r.IntN(F), Skip: -1, G: make([]float64, k), H: make([]float64, ks)}
		for j := range p.G {
			p.G[j] = r.NormFloat64()
		}
		for j := range p.H {
			p.H[j] = r.NormFloat64()
		}
		switch r.IntN(8) {
		case 0, 1:
			p.Skip = r.IntN(n)
		case 2:
			p.Forecast = -1
		}
		switch r.IntN(5) {
		case 0:
		case 1:
			p.Y, p.Labelled = p.F+float64(r.IntN(9)-4)/64, true
		default:
			p.Y, p.Labelled = p.F+r.NormFloat64(), true
		}
		pts[i] = p
	}
	return t, pts
}

// bruteLimits is the reference: every block's value at every point from
// Shifts, sorted, and the floor/ceil ranks of docs/design.md, section 5.3.
func bruteLimits(t *testing.T, alpha float64, tab *BlockTable, pts []PointRecord) (lo, up []float64, m []int) {
	d, err := tab.Shifts(pts)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pts {
		var vm, vp []float64
		for b := 0; p.Forecast >= 0 && b < tab.N; b++ {
			r := tab.Res[b*tab.F+p.Forecast]
			if math.IsNaN(r) || b == p.Skip {
				continue
			}
			f := p.F + d[i*tab.N+b]
			a, c := f-r, f+r
			if math.IsNaN(a) {
				a = math.Inf(-1)
			}
			if math.IsNaN(c) {
				c = math.Inf(1)
			}
			vm, vp = append(vm, a), append(vp, c)
		}
		slices.Sort(vm)
		slices.Sort(vp)
		l, u := math.Inf(-1), math.Inf(1)
		if k := interval.LowerRank(alpha, len(vm)); k >= 1 && k <= len(vm) {
			l = vm[k-1]
		}
		if k := interval.UpperRank(alpha, len(vp)); k >= 1 && k <= len(vp) {
			u = vp[k-1]
		}
		lo, up, m = append(lo, l), append(up, u), append(m, len(vp))
	}
	return lo, up, m
}

// TestFinalizeIndexedExact: the limits from bounded shifts equal, bit for
// bit, those of every shift (finalizeFull) and a sort of every value, with
// the same coverage counts as finalizeFull's; the bounds settle most
// blocks (the indexed path forms few shifts and does not fall back).
func TestFinalizeIndexedExact(t *testing.T) {
	alphas := []float64{0.05, 0.1, 0.3, 0.5}
	for _, c := range []struct {
		seed  uint64
		n     int
		alpha float64
		scale float64
	}{
		{1, 3000, 0.1, 1e-4},
		{2, 2001, 0.1, 1e-3},
		{3, 4003, 0.05, 1e-5},
		{4, 1500, 0.3, 1e-4},
		{5, 999, 0.1, 0},
		{6, 3000, 0.1, 1e-4},
	} {
		tab, pts := indexedCase(c.seed, c.n, 60, c.scale)
		ix := newLimitsIndex(&tab, 2)
		if c.seed == 6 {
			// Thresholds from every 7th block.
			ix = sampledLimitsIndex(&tab, 2, c.n/7)
		}
		if len(ix.out) == 0 {
			t.Fatalf("case %d: no outliers: the case does not test them", c.seed)
		}
		blo, bup, bm := bruteLimits(t, c.alpha, &tab, pts)
		formedAll := 0
		for lo := 0; lo < len(pts); lo += 16 {
			hi := min(lo+16, len(pts))
			got, formed, err := indexedLimits(c.alpha, alphas, &tab, ix, pts[lo:hi])
			if err != nil {
				t.Fatal(err)
			}
			if formed < 0 {
				t.Fatalf("case %d, points %d-%d: the bounds fell back to every shift", c.seed, lo, hi)
			}
			formedAll += formed
			want, err := finalizeFull(c.alpha, alphas, &tab, pts[lo:hi])
			if err != nil {
				t.Fatal(err)
			}
			for i := range got.Lo {
				bits := math.Float64bits
				if bits(got.Lo[i]) != bits(want.Lo[i]) || bits(got.Up[i]) != bits(want.Up[i]) || got.M[i] != want.M[i] {
					t.Errorf("case %d, point %d: indexed [%v, %v] m %d, every shift [%v, %v] m %d", c.seed, lo+i, got.Lo[i], got.Up[i], got.M[i], want.Lo[i], want.Up[i], want.M[i])
				}
				if bits(got.Lo[i]) != bits(blo[lo+i]) || bits(got.Up[i]) != bits(bup[lo+i]) || got.M[i] != bm[lo+i] {
					t.Errorf("case %d, point %d: indexed [%v, %v] m %d, sorted [%v, %v] m %d", c.seed, lo+i, got.Lo[i], got.Up[i], got.M[i], blo[lo+i], bup[lo+i], bm[lo+i])
				}
			}
			if !slices.Equal(got.Covered, want.Covered) || got.Labelled != want.Labelled {
				t.Errorf("case %d, points %d-%d: covered %v of %d, every shift %v of %d", c.seed, lo, hi, got.Covered, got.Labelled, want.Covered, want.Labelled)
			}
		}
		// Every point needs the outliers; beyond them, few blocks.
		if extra := formedAll - len(pts)*len(ix.out); c.scale > 0 && extra > len(pts)*c.n/20 {
			t.Errorf("case %d: %d shifts formed beyond the outliers' of %d points × %d blocks", c.seed, extra, len(pts), c.n)
		}
	}
}

// TestFinalizeIndexedFallsBack: with shifts as large as the residuals
// the bounds settle little; finalizeIndexed then forms every shift and
// still agrees with finalizeFull.
func TestFinalizeIndexedFallsBack(t *testing.T) {
	tab, pts := indexedCase(9, 2000, 20, 10)
	ix := newLimitsIndex(&tab, 1)
	if _, formed, err := indexedLimits(0.1, calibrationAlphas, &tab, ix, pts); err != nil || formed >= 0 {
		t.Fatalf("indexedLimits formed %d shifts, err %v: want a fallback", formed, err)
	}
	got, err := finalizeIndexed(0.1, calibrationAlphas, &tab, ix, pts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := finalizeFull(0.1, calibrationAlphas, &tab, pts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Lo, want.Lo) || !slices.Equal(got.Up, want.Up) || !slices.Equal(got.Covered, want.Covered) {
		t.Errorf("fallback differs from every shift")
	}
}

// TestKthUnion: the k-th smallest of an ascending function's values and
// an ascending slice, against a sort of both, with ties between them.
func TestKthUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 300; trial++ {
		n, no := r.IntN(12), r.IntN(12)
		if n+no == 0 {
			continue
		}
		a := make([]float64, n)
		o := make([]float64, no)
		for i := range a {
			a[i] = float64(r.IntN(10))
		}
		for i := range o {
			o[i] = float64(r.IntN(10))
		}
		slices.Sort(a)
		slices.Sort(o)
		all := slices.Sorted(slices.Values(append(slices.Clone(a), o...)))
		for k := 1; k <= n+no; k++ {
			if got := kthUnion(func(i int) float64 { return a[i] }, n, o, k); got != all[k-1] {
				t.Fatalf("a %v, o %v, k %d: %v, want %v", a, o, k, got, all[k-1])
			}
		}
	}
}
