package audit

import (
	"context"
	"math"

	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// The limits and summary phases' glue: it gathers, from the evaluation
// points, the perturbed predictions and the residual sets (with their
// skip rules), the plain values that package interval turns into limits
// and figures, and lays the figures out as the Result's. The warnings on
// the figures are built by the phase (Fitted.predict).

// limits are the intervals of every evaluated point: jackknife+ (lo, up,
// from m residuals) and, when filled by naiveLimits, in-sample (nlo, nup,
// half-widths nq).
type limits struct {
	lo, up   []float64
	nlo, nup []float64
	nq       []float64 // naive half-widths
	m        []int
	sd       []float64           // the spread of the perturbed predictions (interval.PredictionSD), nil when not measured
	cls      []classify.Forecast // a classifier's forecasts (Options.Classify)
}

// jackknifeLimits computes the jackknife+ limits (interval.JackknifeValues and
// interval.JackknifePlus) of the
// points pts, whose perturbed predictions are preds.point(off+p), from the
// residual sets; self leaves out a point's own training sequence, or
// with pooled residuals its own block (a self-audit; residualSets.at),
// keep (nil: every block) restricts the blocks.
func jackknifeLimits(ctx context.Context, workers int, alpha float64, pts []point, off int, preds perturbed, entries *residualSets, self bool, keep func(blk int) bool) limits {
	l, _ := scanLimits(ctx, workers, alpha, pts, off, preds, entries, self, keep, false)
	return l
}

// limitsAndCurve is jackknifeLimits (alpha, every block, offset 0) and
// the calibration curve (interval.CountCovered over calibrationAlphas) of
// the points pts in one pass: each point's perturbed predictions are read
// once for both.
func limitsAndCurve(ctx context.Context, workers int, alpha float64, pts []point, preds perturbed, entries *residualSets, self bool) (limits, []interval.CalibrationPoint) {
	return scanLimits(ctx, workers, alpha, pts, 0, preds, entries, self, nil, true)
}

// scanLimits is jackknifeLimits and, with curve, the calibration curve
// of the labelled points (nil without curve).
func scanLimits(ctx context.Context, workers int, alpha float64, pts []point, off int, preds perturbed, entries *residualSets, self bool, keep func(blk int) bool, curve bool) (limits, []interval.CalibrationPoint) {
	l, counts := scanCounts(ctx, workers, alpha, pts, off, preds, entries, self, keep, curve, nil)
	if !curve {
		return l, nil
	}
	return l, curveOf(counts, labelledCount(pts))
}

// scanCounts is scanLimits with, for the curve, the coverage counts of
// the labelled points per range of points (nil without curve), to be
// added by curveOf. sel (nil: one made for these points, newSelector) is
// the banded selection of the points' limits (interval.Scratch.Banded)
// where preds is a whole predMatrix and keep is nil; elsewhere every
// value is formed and selected (interval.Scratch.Plain).
func scanCounts(ctx context.Context, workers int, alpha float64, pts []point, off int, preds perturbed, entries *residualSets, self bool, keep func(blk int) bool, curve bool, sel *interval.Selector) (limits, [][]int) {
	n := len(pts)
	l := limits{lo: make([]float64, n), up: make([]float64, n), m: make([]int, n)}
	pm, banded := preds.(predMatrix)
	for _, row := range pm {
		banded = banded && row != nil
	}
	banded = banded && keep == nil && len(pm) > 0
	if banded && sel == nil {
		sel = newSelector(pts, entries, self, workers)
	}
	// Ranges of points small enough that every worker has a few.
	chunk := min(256, max(16, n/(4*max(1, workers))))
	chunks := (n + chunk - 1) / chunk
	buf := make([]interval.Scratch, workers)
	if banded {
		buf = sel.Scratch()
	}
	nb := preds.blocks()
	// Counts per chunk, added afterwards: integers, so the curve does not
	// depend on the order.
	counts := make([][]int, chunks)
	_ = par.For(ctx, chunks, workers, func(w, c int) error {
		s := &buf[w]
		p0, p1 := c*chunk, min(n, (c+1)*chunk)
		// The spread of the range's points, unless sel has that of
		// all of them.
		var sp *interval.Spread
		at := 0 // sp's index of point 0
		if banded {
			sp, at = s.Spread(sel, pm, n, off, p0, p1)
		}
		hits := make([]int, len(calibrationAlphas))
		for p := p0; p < p1; p++ {
			pt := pts[p]
			es, skip := entries.at(pt, self)
			var h []int
			if curve && pt.has {
				h = hits
			}
			if j := p - at; banded && skip == noSkip && sp.Usable(j) {
				if se := sel.Sorted(es); se != nil {
					lo, up, m, ok := s.Banded(calibrationAlphas, alpha, se, pm, off+p, sp, j, pt.y, h)
					if ok {
						l.lo[p], l.up[p], l.m[p] = lo, up, m
						continue
					}
				}
			}
			pred := preds.point(off+p, s.Pred(nb))
			l.lo[p], l.up[p], l.m[p] = s.Plain(calibrationAlphas, alpha, es, pred, skip, keep, pt.y, h)
		}
		counts[c] = hits
		return nil
	})
	if !curve {
		return l, nil
	}
	return l, counts
}

// newSelector prepares banded selection at the points pts (residual sets
// entries, self as in residualSets.at) on up to workers goroutines: the
// residual set of every point is sorted once (interval.Selector.Add).
func newSelector(pts []point, entries *residualSets, self bool, workers int) *interval.Selector {
	s := interval.NewSelector(workers)
	for _, pt := range pts {
		es, _ := entries.at(pt, self)
		s.Add(es)
	}
	return s
}

// curveOf is the calibration curve over calibrationAlphas from per-chunk
// coverage counts over total labelled points.
func curveOf(counts [][]int, total int) []interval.CalibrationPoint {
	return interval.Curve(calibrationAlphas, counts, total)
}

// naiveLimits fills l's in-sample intervals of the points pts: prediction
// ± the per-forecast upper quantile at alpha of the in-sample residuals
// naive (unbounded where a forecast has none), pooled by key
// (Options.poolKey; nil: by position).
func naiveLimits(alpha float64, naive map[forecast][]float64, key func(forecast) forecast, pts []point, l *limits) {
	if key == nil {
		key = func(f forecast) forecast { return f }
	} else {
		naive = pooledValues(naive, key)
	}
	halfw := map[forecast]float64{}
	for f, v := range naive {
		halfw[f] = interval.UpperQuantile(alpha, v)
	}
	l.nlo, l.nup, l.nq = make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	for p, pt := range pts {
		q, ok := halfw[key(pt.f)]
		if !ok {
			q = math.Inf(1)
		}
		l.nlo[p], l.nup[p], l.nq[p] = pt.pred-q, pt.pred+q, q
	}
}

// sequences lays out the points' intervals by evaluated sequence of d
// (conf, when not nil, holds each point's calibrated limits).
func sequences(d *blocks.Dataset, pts []point, l limits, conf []*interval.StepConformal) []SequenceResult {
	seqs := make([]SequenceResult, d.Len())
	for i, s := range d.Seqs {
		seqs[i].ID = s.ID
	}
	// Every sequence's steps are cut from one array, and the targets from
	// another, each made at its exact size.
	count := make([]int, d.Len())
	labelled := 0
	for _, pt := range pts {
		count[pt.seq]++
		if pt.has {
			labelled++
		}
	}
	steps, targets := make([]StepResult, len(pts)), make([]float64, 0, labelled)
	for i, n := range count {
		seqs[i].Steps, steps = steps[:0:n], steps[n:]
	}
	for p, pt := range pts {
		s := d.Seqs[pt.seq]
		st := StepResult{Row: pt.f.T, Step: s.Steps[pt.f.T], Horizon: pt.f.H, Prediction: pt.pred,
			Lower: l.lo[p], Upper: l.up[p], NaiveLower: l.nlo[p], NaiveUpper: l.nup[p], M: l.m[p]}
		if pt.has {
			targets = append(targets, pt.y)
			st.Target = &targets[len(targets)-1]
		}
		if conf != nil {
			st.Conformal = conf[p]
		}
		if l.cls != nil {
			st.Class = &l.cls[p]
			if conf != nil {
				st.Class.SplitFrom(conf[p].SplitLower, conf[p].SplitUpper)
			}
		}
		seqs[pt.seq].Steps = append(seqs[pt.seq].Steps, st)
	}
	return seqs
}

// summarize computes the metrics of docs/design.md, section 8, over the
// labelled points pts with intervals l (jackknife+ and in-sample); nil
// when no point is labelled. The interval metrics are interval.Metrics',
// the one place they are computed (kindSummary); summarize adds the point predictions' errors, the
// gaps and, for horizons > 1, the per-horizon figures.
func summarize(lv level, horizons int, pts []point, l limits) *Summary {
	nrow, labelled := 0, 0
	for _, pt := range pts {
		if pt.has {
			labelled++
			nrow = max(nrow, pt.f.T+1)
		}
	}
	if labelled == 0 {
		return nil
	}
	jk := kindSummary(interval.KindJackknife, lv, pts, l.lo, l.up, nil)
	// Naive coverage is |y - prediction| <= q: exact, where the float
	// limits prediction ± q could misjudge a target lying on the boundary
	// (in a self-audit one point per row does).
	nv := kindSummary(interval.KindInSample, lv, pts, l.nlo, l.nup, l.nq)
	s := &Summary{Alpha: lv.alpha, Points: labelled,
		Coverage: jk.Coverage, CoveragePerStep: jk.CoveragePerStep, JointCoverage: jk.JointCoverage,
		MeanLength: jk.MeanLength, LengthPerStep: jk.LengthPerStep, Infinite: jk.Infinite,
		IntervalScore: jk.IntervalScore, Audit: jk.Audit,
		Naive: NaiveSummary{Coverage: nv.Coverage, CoveragePerStep: nv.CoveragePerStep,
			MeanLength: nv.MeanLength, LengthPerStep: nv.LengthPerStep},
		PointsPerStep: make([]int, nrow), RMSEPerStep: make([]float64, nrow), GapPerStep: make([]float64, nrow),
	}
	sse, sseStep := 0.0, make([]float64, nrow)
	for _, pt := range pts {
		if pt.has {
			e := (pt.y - pt.pred) * (pt.y - pt.pred)
			sse += e
			sseStep[pt.f.T] += e
			s.PointsPerStep[pt.f.T]++
		}
	}
	s.RMSE = math.Sqrt(sse / float64(labelled))
	for t := range nrow {
		s.RMSEPerStep[t] = math.Sqrt(num.Ratio(sseStep[t], float64(s.PointsPerStep[t])))
		s.GapPerStep[t] = s.LengthPerStep[t] - s.Naive.LengthPerStep[t]
	}
	s.Gap = s.MeanLength - s.Naive.MeanLength
	if horizons > 1 {
		s.CoveragePerHorizon, s.LengthPerHorizon, s.PointsPerHorizon = perHorizon(horizons, pts, l)
	}
	return s
}

// kindSummary computes the metrics of one kind of interval (limits lo,
// up per point) over the labelled points pts at lv (interval.Metrics).
// With half-widths q (intervals symmetric about the prediction) a value
// is covered when |y - prediction| <= q, which the float limits could
// misjudge on the boundary.
func kindSummary(kind string, lv level, pts []point, lo, up, q []float64) interval.KindSummary {
	nrow := 0
	for _, pt := range pts {
		if pt.has {
			nrow = max(nrow, pt.f.T+1)
		}
	}
	m := interval.NewMetrics(lv.alpha, lv.low, lv.high, nrow)
	for p, pt := range pts {
		if !pt.has {
			continue
		}
		y, a, b := pt.y, lo[p], up[p]
		in := a <= y && y <= b
		if q != nil {
			in = math.Abs(y-pt.pred) <= q[p]
		}
		m.Add(pt.seq, pt.f.T, y, a, b, in)
	}
	return m.Summary(kind)
}

// perHorizon returns the coverage, the mean width of the finite intervals
// and the number of labelled points of each of k horizons.
func perHorizon(k int, points []point, l limits) (coverage, length []float64, n []int) {
	covered, lsum, lcnt := make([]float64, k), make([]float64, k), make([]float64, k)
	n = make([]int, k)
	for p, pt := range points {
		h := pt.f.H
		if !pt.has || h < 0 || h >= k {
			continue
		}
		n[h]++
		if l.lo[p] <= pt.y && pt.y <= l.up[p] {
			covered[h]++
		}
		if !math.IsInf(l.lo[p], 0) && !math.IsInf(l.up[p], 0) {
			lsum[h] += l.up[p] - l.lo[p]
			lcnt[h]++
		}
	}
	coverage, length = make([]float64, k), make([]float64, k)
	for h := range k {
		coverage[h] = num.Ratio(covered[h], float64(n[h]))
		length[h] = num.Ratio(lsum[h], lcnt[h])
	}
	return coverage, length, n
}

// coverOf is the coverage (lo <= y <= up) and the mean finite length of
// the intervals l over the labelled points pts.
func coverOf(pts []point, l limits) (cov, length float64) {
	var c, n, s, m float64
	for p, pt := range pts {
		if !pt.has {
			continue
		}
		n++
		if l.lo[p] <= pt.y && pt.y <= l.up[p] {
			c++
		}
		if !math.IsInf(l.lo[p], 0) && !math.IsInf(l.up[p], 0) {
			s += l.up[p] - l.lo[p]
			m++
		}
	}
	return num.Ratio(c, n), num.Ratio(s, m)
}

// calibrationAlphas is the grid of the calibration curve.
var calibrationAlphas = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}
