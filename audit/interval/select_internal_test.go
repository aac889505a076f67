package interval

import (
	"math"
	"math/rand/v2"
	"slices"
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
