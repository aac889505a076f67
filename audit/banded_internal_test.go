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
// of the plain path (interval.JackknifeValues, interval.JackknifePlus), and the coverage
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
		byF := map[forecast][]interval.Residual{}
		for f := range 4 {
			es := make([]interval.Residual, nb)
			for b := range es {
				v := math.Abs(r.NormFloat64())
				if f == 0 {
					v = float64(max(0, r.IntN(5)-2)) / 4 // 60% zeros
				}
				es[b] = interval.Residual{Blk: b, Seq: b, R: v}
			}
			if f == 1 && trial%2 == 1 {
				es[r.IntN(nb)].R = math.NaN()
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
					preds[b][p] = es[b].R
				}
			case 2:
				preds[r.IntN(nb)][p] = math.NaN()
			case 3:
				preds[r.IntN(nb)][p] = math.Inf(1 - 2*r.IntN(2))
			case 4:
				// The target ties values.
				b := r.IntN(nb)
				pts[p].y = preds[b][p] + es[b].R
			case 5:
				b := r.IntN(nb)
				pts[p].y = preds[b][p] - es[b].R
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
			vm, vp := interval.JackknifeValues(es, preds.point(p, pred), skip, nil, nil, nil)
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

// BenchmarkSelectPaper is the limits phase's selection alone at the
// paper's scale (1000 blocks, 10,000 points over 10 forecasts, the
// blocks' predictions spread over a few residual spacings) from a whole
// predMatrix, with the calibration curve: banded, and plain (a
// self-audit, whose points leave their own sequence out).
func BenchmarkSelectPaper(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const nb, np, nf = 1000, 10000, 10
	byF := map[forecast][]interval.Residual{}
	for f := range nf {
		es := make([]interval.Residual, nb)
		for k := range es {
			es[k] = interval.Residual{Blk: k, Seq: k, R: math.Abs(r.NormFloat64())}
		}
		byF[forecast{T: f}] = es
	}
	entries := byPosition(byF)
	pts := make([]point, np)
	preds := make(predMatrix, nb)
	for k := range preds {
		preds[k] = make([]float64, np)
	}
	for p := range pts {
		F := r.NormFloat64()
		pts[p] = point{seq: r.IntN(nb), f: forecast{T: p % nf}, pred: F, y: F + r.NormFloat64(), has: true}
		for k := range preds {
			preds[k][p] = F + 1e-2*r.NormFloat64()
		}
	}
	for _, self := range []bool{false, true} {
		name := "banded"
		if self {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				scanCounts(b.Context(), 2, 0.1, pts, 0, preds, entries, self, nil, true, nil)
			}
		})
	}
}
