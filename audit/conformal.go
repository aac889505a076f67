package audit

import (
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Held-out calibration (docs/design.md, section 6). A calibration set is
// m labelled sequences that the model was not trained on. Per forecast
// (row t, horizon h), its values give the split-conformal half-width, the
// Bonferroni half-widths and the conformalized jackknife+ scale: package
// interval's arithmetic, where the kinds and their guarantee are set out.
// Here the calibration and test points are grouped by forecast, and the
// figures laid out as the Result's.

// Conformal is what a calibration set adds to a result.
type Conformal struct {
	File      string
	Sequences int
	Values    int // labelled calibration values
	// Forecasts are the calibrated quantities per forecast (row,
	// horizon), by row then horizon.
	Forecasts []interval.ConformalForecast
	// Kinds compares every kind of interval on the labelled test values
	// (nil without them): jackknife+, conformalized jackknife+, split
	// conformal, Bonferroni, in-sample, normalised (when the fit has scales).
	Kinds []interval.KindSummary
	// Notes say where calibration values are too few for finite limits.
	Notes []string
	// Calibrated are jackknife+, conformalized jackknife+, split conformal
	// (and normalised) at the calibration values: what the recommendation is
	// chosen from (interval.Choose).
	Calibrated []interval.CalibrationFigures
	// Recommendation is the kind of interval the audit recommends.
	Recommendation *Recommendation
}

// calibration is what a calibration set fixes per forecast (row,
// horizon): the calibration |residuals| res, the split-conformal
// half-width half, the conformalized jackknife+ scale scale and the
// normalised split-conformal quantile norm (nil without scales).
type calibration struct {
	res   map[forecast][]float64
	half  map[forecast]float64
	scale map[forecast]float64
	norm  map[forecast]float64
	// forecasts are the calibrated quantities by row then horizon (every
	// forecast of the calibration or test points); few the rows with
	// calibration values too few for finite limits; values the labelled
	// calibration values.
	forecasts []interval.ConformalForecast
	few       []int
	pooled    []int // rows whose quantiles are taken over a group of rows
	values    int
	figs      []interval.CalibrationFigures
}

// calibrate computes the calibration of the labelled calibration points
// cal, whose jackknife+ limits are cl, for the forecasts of cal and test:
// per forecast, the conformal quantile at alpha of the |residuals| (the
// split-conformal half-width) and of the conformalized jackknife+ scores
// (interval.CJScore), and the fraction of calibration values inside their
// jackknife+ interval.
func calibrate(alpha float64, pool int, cal []point, cl limits, test []point) calibration {
	c := calibration{res: map[forecast][]float64{}, half: map[forecast]float64{}, scale: map[forecast]float64{}}
	scores, nscores := map[forecast][]float64{}, map[forecast][]float64{}
	if cl.sd != nil {
		c.norm = map[forecast]float64{}
	}
	inJK := map[forecast]int{}
	keys := map[forecast]bool{}
	for k, pt := range cal {
		if !pt.has {
			continue
		}
		c.values++
		keys[pt.f] = true
		c.res[pt.f] = append(c.res[pt.f], math.Abs(pt.y-pt.pred))
		scores[pt.f] = append(scores[pt.f], interval.CJScore(pt.pred, cl.lo[k], cl.up[k], pt.y))
		if c.norm != nil {
			nscores[pt.f] = append(nscores[pt.f], interval.NormalisedScore(pt.pred, cl.sd[k], pt.y))
		}
		if cl.lo[k] <= pt.y && pt.y <= cl.up[k] {
			inJK[pt.f]++
		}
	}
	for _, pt := range test {
		keys[pt.f] = true
	}
	// Rows are grouped, Mondrian fashion, until each group has enough
	// values (interval.GroupHorizons, interval.GroupNeed).
	var rows, hs, counts []int
	for f := range keys {
		rows, hs, counts = append(rows, f.T), append(hs, f.H), append(counts, len(c.res[f]))
	}
	pools := interval.GroupHorizons(rows, hs, counts, interval.GroupNeed(alpha, pool))
	for _, f := range sortedForecasts(keys) {
		res, sc, nsc, pooled := c.res[f], scores[f], nscores[f], 0
		if rows := pools[f.H][f.T]; len(rows) > 1 {
			res, sc, nsc = nil, nil, nil
			for _, r := range rows {
				g := forecast{T: r, H: f.H}
				res, sc, nsc = append(res, c.res[g]...), append(sc, scores[g]...), append(nsc, nscores[g]...)
			}
			pooled = len(res)
			c.pooled = append(c.pooled, f.T)
		}
		c.half[f] = interval.UpperQuantile(alpha, res)
		c.scale[f] = interval.UpperQuantile(alpha, sc)
		if c.norm != nil {
			c.norm[f] = interval.UpperQuantile(alpha, nsc)
		}
		m := len(c.res[f])
		c.forecasts = append(c.forecasts, interval.ConformalForecast{Row: f.T, Horizon: f.H, M: m, Pooled: pooled, HalfWidth: c.half[f], Scale: c.scale[f],
			JackknifeCoverage: num.Ratio(float64(inJK[f]), float64(m))})
		if math.IsInf(c.half[f], 1) && (len(c.few) == 0 || c.few[len(c.few)-1] != f.T) {
			c.few = append(c.few, f.T)
		}
	}
	c.pooled = slices.Compact(c.pooled)
	c.figs = []interval.CalibrationFigures{{Kind: interval.KindJackknife}, {Kind: interval.KindConformalJackknife, Guaranteed: true}, {Kind: interval.KindSplit, Guaranteed: true}}
	if c.norm != nil {
		c.figs = append(c.figs, interval.CalibrationFigures{Kind: interval.KindNormalised, Guaranteed: true})
	}
	for k, pt := range cal {
		if pt.has {
			lo, up := interval.CJLimits(pt.pred, cl.lo[k], cl.up[k], c.scale[pt.f])
			c.figs[0].Add(pt.f.T, pt.y, cl.lo[k], cl.up[k])
			c.figs[1].Add(pt.f.T, pt.y, lo, up)
			c.figs[2].Add(pt.f.T, pt.y, pt.pred-c.half[pt.f], pt.pred+c.half[pt.f])
			if c.norm != nil {
				lo, up = interval.NormalisedLimits(pt.pred, cl.sd[k], c.norm[pt.f])
				c.figs[3].Add(pt.f.T, pt.y, lo, up)
			}
		}
	}
	for i := range c.figs {
		c.figs[i].Finish()
	}
	return c
}

// calibrated are the calibrated intervals of the test points: split
// conformal, Bonferroni (half-widths in the limits' nq), conformalized
// jackknife+ and normalised split conformal (nil limits without scales);
// bonInf counts the unbounded Bonferroni intervals.
type calibrated struct {
	split, bonf, cj, norm limits
	bonInf                int
}

// calibratedLimits computes the calibrated intervals of the test points
// pts, whose jackknife+ limits are jk, from the calibration c: split
// conformal pred ± half, Bonferroni pred ± the quantile at alpha / L
// (L[seq] the forecasts of a point's sequence whose target row lies inside
// it), conformalized jackknife+ interval.CJLimits with the forecast's scale.
func calibratedLimits(alpha float64, pts []point, L []int, c calibration, jk limits) calibrated {
	type bonKey struct {
		f forecast
		L int
	}
	bon := map[bonKey]float64{}
	n := len(pts)
	mk := func() limits {
		return limits{lo: make([]float64, n), up: make([]float64, n), nq: make([]float64, n)}
	}
	out := calibrated{split: mk(), bonf: mk(), cj: mk()}
	if c.norm != nil && jk.sd != nil {
		out.norm = mk()
	}
	for p, pt := range pts {
		h := c.half[pt.f]
		out.split.lo[p], out.split.up[p], out.split.nq[p] = pt.pred-h, pt.pred+h, h
		k := bonKey{pt.f, max(1, L[pt.seq])}
		b, ok := bon[k]
		if !ok {
			b = interval.UpperQuantile(alpha/float64(k.L), c.res[pt.f])
			bon[k] = b
		}
		if math.IsInf(b, 1) {
			out.bonInf++
		}
		out.bonf.lo[p], out.bonf.up[p], out.bonf.nq[p] = pt.pred-b, pt.pred+b, b
		out.cj.lo[p], out.cj.up[p] = interval.CJLimits(pt.pred, jk.lo[p], jk.up[p], c.scale[pt.f])
		if out.norm.lo != nil {
			out.norm.lo[p], out.norm.up[p] = interval.NormalisedLimits(pt.pred, jk.sd[p], c.norm[pt.f])
		}
	}
	return out
}

// conformal is the calibration step of the limits phase: it calibrates
// the test intervals (points test) on the calibration set as the fit
// keeps it (cf: its points and their jackknife+ limits) and returns what it adds to the result and
// every test point's calibrated limits. jk holds the test points'
// jackknife+ and in-sample limits; with labelled test points the kinds of
// interval are compared.
func conformal(p *problem, cf *calFit, test []point, jk limits, labelled bool) (*Conformal, []*interval.StepConformal) {
	lv := p.level()
	alpha := lv.alpha
	cb := calibrate(alpha, p.opt.CalibrationPool, cf.points, cf.lim, test)
	c := &Conformal{File: cf.file, Sequences: cf.seqs, Values: cb.values, Forecasts: cb.forecasts, Calibrated: cb.figs}
	if len(cb.pooled) > 0 {
		need := interval.GroupNeed(alpha, p.opt.CalibrationPool)
		c.Notes = append(c.Notes, fmt.Sprintf("The split-conformal and conformalized jackknife+ quantiles at %s are taken over groups of consecutive steps with at least %d calibration values each (Mondrian groups), which assumes the residuals of a group's steps are alike; their guarantee is for each group, not step by step.",
			interval.StepList(cb.pooled), need))
	}
	if len(cb.few) > 0 {
		need := interval.MinValues(alpha)
		c.Notes = append(c.Notes, fmt.Sprintf("The calibration set has fewer than %d values at %s: the split-conformal and conformalized jackknife+ intervals there are unbounded (a finite %s interval needs at least %d calibration values per step).",
			need, interval.StepList(cb.few), pct(1-alpha), need))
	}
	// L per test sequence: its forecasts whose target row lies inside it.
	L := make([]int, p.eval.Len())
	for _, pt := range test {
		if pt.f.T+pt.f.H < p.eval.Seqs[pt.seq].Len() {
			L[pt.seq]++
		}
	}
	cd := calibratedLimits(alpha, test, L, cb, jk)
	steps := make([]*interval.StepConformal, len(test))
	for i, pt := range test {
		steps[i] = &interval.StepConformal{SplitLower: cd.split.lo[i], SplitUpper: cd.split.up[i], BonferroniLower: cd.bonf.lo[i], BonferroniUpper: cd.bonf.up[i],
			JackknifeLower: cd.cj.lo[i], JackknifeUpper: cd.cj.up[i], NormalisedLower: math.NaN(), NormalisedUpper: math.NaN(), M: len(cb.res[pt.f])}
		if cd.norm.lo != nil {
			steps[i].NormalisedLower, steps[i].NormalisedUpper = cd.norm.lo[i], cd.norm.up[i]
		}
	}
	if n := len(test); cd.bonInf > 0 && len(cb.few) == 0 {
		longest := slices.Max(L)
		c.Notes = append(c.Notes, fmt.Sprintf("%d of %d Bonferroni intervals are unbounded: joint %s coverage of a sequence of %d forecasts needs at least %d calibration values per step.",
			cd.bonInf, n, pct(1-alpha), longest, interval.MinValues(alpha/float64(longest))))
	}
	if labelled {
		c.Kinds = []interval.KindSummary{
			kindSummary(interval.KindJackknife, lv, test, jk.lo, jk.up, nil),
			kindSummary(interval.KindConformalJackknife, lv, test, cd.cj.lo, cd.cj.up, nil),
			kindSummary(interval.KindSplit, lv, test, cd.split.lo, cd.split.up, cd.split.nq),
			kindSummary(interval.KindBonferroni, lv, test, cd.bonf.lo, cd.bonf.up, cd.bonf.nq),
			kindSummary(interval.KindInSample, lv, test, jk.nlo, jk.nup, jk.nq),
		}
		if cd.norm.lo != nil {
			c.Kinds = append(c.Kinds, kindSummary(interval.KindNormalised, lv, test, cd.norm.lo, cd.norm.up, nil))
		}
	}
	return c, steps
}

// pct formats a fraction as a percentage, "90%" or "92.5%".
func pct(x float64) string { return fmt.Sprintf("%g%%", math.Round(1000*x)/10) }
