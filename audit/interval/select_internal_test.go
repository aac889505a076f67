package interval

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// sortedRank is the k-th smallest (1-based) of v by a full sort, NaN
// counting as -Inf (neg) or +Inf: the definition of a jackknife+ limit,
// an independent reference for the banded selection.
func sortedRank(v []float64, k int, neg bool) float64 {
	w := slices.Clone(v)
	if neg {
		InfForNaN(w, nil)
	} else {
		InfForNaN(nil, w)
	}
	slices.Sort(w)
	return w[k-1]
}

// TestBandedLimitsTakesBand: at a point whose blocks' predictions have a
// small spread, the banded path settles the limits (it does not fall back
// to the plain path), with those of a full sort of its values, so that
// audit's TestBandedLimits (the scan over both paths) exercises it.
func TestBandedLimitsTakesBand(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const nb = 500
	es := make([]Residual, nb)
	preds := make([][]float64, nb)
	for b := range es {
		es[b] = Residual{Blk: b, Seq: b, R: math.Abs(r.NormFloat64())}
		preds[b] = []float64{1 + 1e-3*r.NormFloat64()}
	}
	var sp Spread
	sp.rows(preds, 0, 1)
	if !sp.Usable(0) {
		t.Fatalf("spread [%v, %v] (NaN %v) not usable", sp.fmin[0], sp.fmax[0], sp.nan[0])
	}
	var sc Scratch
	alphas := []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}
	hits := make([]int, len(alphas))
	lo, up, m, ok := sc.Banded(alphas, 0.1, sortResiduals(es), preds, 0, &sp, 0, 1.5, hits)
	if !ok {
		t.Fatal("banded selection fell back to the plain path")
	}
	if len(sc.cand) > nb/4 {
		t.Errorf("%d candidates of %d", len(sc.cand), nb)
	}
	pred := make([]float64, nb)
	for b, row := range preds {
		pred[b] = row[0]
	}
	vm, vp := JackknifeValues(es, pred, Skip{Seq: -1, Blk: -1}, nil, nil, nil)
	wlo, wup := sortedRank(vm, LowerRank(0.1, nb), true), sortedRank(vp, UpperRank(0.1, nb), false)
	if lo != wlo || up != wup || m != nb {
		t.Errorf("[%v, %v] of %d, want [%v, %v] of %d", lo, up, m, wlo, wup, nb)
	}
}

// TestSortResidualsOrder checks sortResiduals against a stable comparison
// sort (sort.SliceStable by residual): the same residuals and blocks in
// the same order, ties (and -0 against +0) in the order given, over
// values of every sign and scale, subnormals and repeated values, and
// refuses a set holding a value that is not finite.
func TestSortResidualsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pool := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e-300, 3}
	for _, n := range []int{0, 1, 2, 7, 300, 1000} {
		es := make([]Residual, n)
		for i := range es {
			v := pool[r.IntN(len(pool))]
			if r.IntN(2) == 0 {
				v = r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10))
			}
			es[i] = Residual{Blk: i, Seq: 3 * i, R: v}
		}
		want := slices.Clone(es)
		sort.SliceStable(want, func(i, j int) bool { return want[i].R < want[j].R })
		got := sortResiduals(es)
		if got == nil || len(got.r) != n {
			t.Fatalf("n %d: %v", n, got)
		}
		for j := range want {
			if math.Float64bits(got.r[j]) != math.Float64bits(want[j].R) || got.b[j] != want[j].Blk {
				t.Fatalf("n %d, position %d: residual %v of block %d, want %v of block %d", n, j, got.r[j], got.b[j], want[j].R, want[j].Blk)
			}
		}
		if n > 0 {
			es[n/2].R = math.NaN()
			if sortResiduals(es) != nil {
				t.Errorf("n %d: a NaN sorted", n)
			}
		}
	}
}
