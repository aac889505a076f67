package audit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// sortedRank is the k-th smallest (1-based) of v by a full sort, NaN
// counting as -Inf (neg) or +Inf: the definition of a jackknife+ limit,
// an independent reference for the banded selection.
func sortedRank(v []float64, k int, neg bool) float64 {
	w := slices.Clone(v)
	if neg {
		interval.InfForNaN(w, nil)
	} else {
		interval.InfForNaN(nil, w)
	}
	slices.Sort(w)
	return w[k-1]
}

// TestBandedLimits: scanCounts' banded selection gives every point the
// jackknife+ limits of a full sort of its values and, bit for bit, those
// of the plain path (jackknifeValues, jackknifePlus), and the coverage
// counts of countCovered, on residual sets and predictions made to meet
// its edge cases: predictions spread from none to far more than the
// residuals, outlying blocks, ties among residuals and at the target,
// values that are exactly zero, NaN and infinite predictions and
// residuals, points that leave their own sequence out, and levels whose
// ranks fall outside the values.
func TestBandedLimits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 24 {
		nb := []int{1, 3, 20, 257, 1000}[trial%5]
		spread := []float64{0, 1e-6, 1e-3, 0.1, 10}[trial%5]
		alpha := []float64{0.1, 0.05, 0.5, 0.9, 0.01}[(trial/5)%5]
		self := trial%7 == 3
		// Residual sets of four forecasts; the first has ties, the second
		// a NaN residual when trial is odd.
		byF := map[forecast][]entry{}
		for f := range 4 {
			es := make([]entry, nb)
			for b := range es {
				v := math.Abs(r.NormFloat64())
				if f == 0 {
					v = float64(max(0, r.IntN(5)-2)) / 4 // 60% zeros
				}
				es[b] = entry{blk: b, seq: b, r: v}
			}
			if f == 1 && trial%2 == 1 {
				es[r.IntN(nb)].r = math.NaN()
			}
			byF[forecast{T: f}] = es
		}
		entries := byPosition(byF)
		const np = 97
		pts := make([]point, np)
		preds := make(predMatrix, nb)
		for b := range preds {
			preds[b] = make([]float64, np)
		}
		for p := range pts {
			f := forecast{T: p % 4}
			F := r.NormFloat64()
			pts[p] = point{seq: r.IntN(nb + 2), f: f, pred: F, y: F + r.NormFloat64(), has: p%5 != 0}
			for b := range preds {
				preds[b][p] = F + spread*r.NormFloat64()
				if r.IntN(50) == 0 {
					preds[b][p] += 100 * spread * r.NormFloat64() // an outlying block
				}
			}
			es := byF[f]
			switch p % 11 {
			case 1:
				// Values exactly zero: the prediction equals a residual.
				for b := range preds {
					preds[b][p] = es[b].r
				}
			case 2:
				preds[r.IntN(nb)][p] = math.NaN()
			case 3:
				preds[r.IntN(nb)][p] = math.Inf(1 - 2*r.IntN(2))
			case 4:
				// The target ties values.
				b := r.IntN(nb)
				pts[p].y = preds[b][p] + es[b].r
			case 5:
				b := r.IntN(nb)
				pts[p].y = preds[b][p] - es[b].r
			case 6, 7:
				// Zeros of both signs: -0 - 0 is -0, +0 - 0 is +0.
				for b := range preds {
					preds[b][p] = math.Copysign(0, float64(r.IntN(2))-0.5)
				}
			}
		}
		name := fmt.Sprintf("trial %d (%d blocks, spread %g, alpha %g, self %v)", trial, nb, spread, alpha, self)
		got, counts := scanCounts(t.Context(), 2, alpha, pts, 0, preds, entries, self, nil, true, nil)
		hits := make([]int, len(calibrationAlphas))
		for _, c := range counts {
			for a, v := range c {
				hits[a] += v
			}
		}
		want := make([]int, len(calibrationAlphas))
		pred := make([]float64, nb)
		for p, pt := range pts {
			es, skip := entries.at(pt, self)
			vm, vp := jackknifeValues(es, preds.point(p, pred), skip, nil, nil, nil)
			if pt.has {
				interval.CountCovered(calibrationAlphas, pt.y, vm, vp, want)
			}
			m := len(vp)
			lo, up := math.Inf(-1), math.Inf(1)
			if k := interval.LowerRank(alpha, m); k >= 1 && k <= m {
				lo = sortedRank(vm, k, true)
			}
			if k := interval.UpperRank(alpha, m); k >= 1 && k <= m {
				up = sortedRank(vp, k, false)
			}
			if got.m[p] != m || got.lo[p] != lo || got.up[p] != up {
				t.Fatalf("%s: point %d: [%v, %v] of %d, want [%v, %v] of %d", name, p, got.lo[p], got.up[p], got.m[p], lo, up, m)
			}
			plo, pup := interval.JackknifePlus(alpha, vm, vp)
			if math.Float64bits(got.lo[p]) != math.Float64bits(plo) || math.Float64bits(got.up[p]) != math.Float64bits(pup) {
				t.Fatalf("%s: point %d: [%v, %v], the plain path [%v, %v]", name, p, got.lo[p], got.up[p], plo, pup)
			}
		}
		if !slices.Equal(hits, want) {
			t.Fatalf("%s: coverage counts %v, want %v", name, hits, want)
		}
	}
}

// TestBandedLimitsTakesBand: at the points of TestBandedLimits' kind with
// a small spread, the banded path settles the limits (it does not fall
// back to the plain path), so that the test above exercises it.
func TestBandedLimitsTakesBand(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const nb = 500
	es := make([]entry, nb)
	preds := make(predMatrix, nb)
	for b := range es {
		es[b] = entry{blk: b, seq: b, r: math.Abs(r.NormFloat64())}
		preds[b] = []float64{1 + 1e-3*r.NormFloat64()}
	}
	var sp predSpread
	sp.rows(preds, 0, 1)
	if !sp.usable(0) {
		t.Fatalf("spread [%v, %v] (NaN %v) not usable", sp.fmin[0], sp.fmax[0], sp.nan[0])
	}
	var sc selectScratch
	hits := make([]int, len(calibrationAlphas))
	lo, up, m, ok := sc.banded(0.1, sortEntries(es), preds, 0, sp.fmin[0], sp.fmax[0], 1.5, hits)
	if !ok {
		t.Fatal("banded selection fell back to the plain path")
	}
	if len(sc.cand) > nb/4 {
		t.Errorf("%d candidates of %d", len(sc.cand), nb)
	}
	vm, vp := jackknifeValues(es, preds.point(0, make([]float64, nb)), noSkip, nil, nil, nil)
	wlo, wup := sortedRank(vm, interval.LowerRank(0.1, nb), true), sortedRank(vp, interval.UpperRank(0.1, nb), false)
	if lo != wlo || up != wup || m != nb {
		t.Errorf("[%v, %v] of %d, want [%v, %v] of %d", lo, up, m, wlo, wup, nb)
	}
}
