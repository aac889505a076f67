package audit

import (
	"context"
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// The limits and summary phases: plain functions of the evaluation
// points, the perturbed predictions and the residual entries, without a
// model.

// limits are the intervals of every evaluated point: jackknife+ (lo, up,
// from m residuals) and, when filled by naiveLimits, in-sample (nlo, nup,
// half-widths nq).
type limits struct {
	lo, up   []float64
	nlo, nup []float64
	nq       []float64 // naive half-widths
	m        []int
}

// jackknifeAt is the jackknife+ interval at one point (DESIGN section 5):
// over the m residual entries es of the point's forecast, leaving out
// those of training sequence skipSeq (-1: none) and those of blocks keep
// rejects (keep nil: none), with pred[b] the prediction of block b's model
// at the point, V- = {pred[b] - r} and V+ = {pred[b] + r}; lo is the
// floor(alpha(m+1))-th smallest of V- (-Inf below 1), up the
// ceil((1-alpha)(m+1))-th smallest of V+ (+Inf above m). vm and vp are
// scratch space, returned for reuse.
func jackknifeAt(alpha float64, es []entry, pred []float64, skipSeq int, keep func(blk int) bool, vm, vp []float64) (lo, up float64, m int, vm2, vp2 []float64) {
	vm, vp = jackknifeValues(es, pred, skipRule{seq: skipSeq, blk: -1}, keep, vm, vp)
	lo, up = interval.JackknifePlus(alpha, vm, vp)
	return lo, up, len(vp), vm, vp
}

// jackknifeValues returns the sets V- and V+ of jackknifeAt, leaving out
// the entries skip drops, in vm and vp (scratch space, reused).
func jackknifeValues(es []entry, pred []float64, skip skipRule, keep func(blk int) bool, vm, vp []float64) ([]float64, []float64) {
	vm, vp = vm[:0], vp[:0]
	for _, e := range es {
		if skip.drops(e) || (keep != nil && !keep(e.blk)) {
			continue
		}
		f := pred[e.blk]
		vm = append(vm, f-e.r)
		vp = append(vp, f+e.r)
	}
	return vm, vp
}

// jackknifeLimits computes the jackknife+ limits (jackknifeAt) of the
// points pts, whose perturbed predictions are preds.point(off+p), from the
// residual sets; self leaves out a point's own training sequence, or
// with pooled residuals its own block (a self-audit; residualSets.at),
// keep (nil: every block) restricts the blocks.
func jackknifeLimits(ctx context.Context, workers int, alpha float64, pts []point, off int, preds perturbed, entries *residualSets, self bool, keep func(blk int) bool) limits {
	l, _ := scanLimits(ctx, workers, alpha, pts, off, preds, entries, self, keep, false)
	return l
}

// limitsAndCurve is jackknifeLimits (alpha, every block, offset 0) and
// calibrationCurve of the points pts in one pass: each point's perturbed
// predictions are read once for both, where the two functions read them
// twice.
func limitsAndCurve(ctx context.Context, workers int, alpha float64, pts []point, preds perturbed, entries *residualSets, self bool) (limits, []CalibrationPoint) {
	return scanLimits(ctx, workers, alpha, pts, 0, preds, entries, self, nil, true)
}

// scanLimits is jackknifeLimits and, with curve, the calibration curve
// of the labelled points (nil without curve).
func scanLimits(ctx context.Context, workers int, alpha float64, pts []point, off int, preds perturbed, entries *residualSets, self bool, keep func(blk int) bool, curve bool) (limits, []CalibrationPoint) {
	l, counts := scanCounts(ctx, workers, alpha, pts, off, preds, entries, self, keep, curve, nil)
	if !curve {
		return l, nil
	}
	return l, curveOf(counts, labelledCount(pts))
}

// scanCounts is scanLimits with, for the curve, the coverage counts of
// the labelled points per range of points (nil without curve), to be
// added by curveOf. sel (nil: one made for these points) is the banded
// selection of the points' limits where preds is a whole predMatrix and
// keep is nil; elsewhere every value is formed and selected.
func scanCounts(ctx context.Context, workers int, alpha float64, pts []point, off int, preds perturbed, entries *residualSets, self bool, keep func(blk int) bool, curve bool, sel *selector) (limits, [][]int) {
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
	buf := make([]selectScratch, workers)
	if banded {
		buf = sel.scratch
	}
	// Counts per chunk, added afterwards: integers, so the curve does not
	// depend on the order.
	counts := make([][]int, chunks)
	_ = par.For(ctx, chunks, workers, func(w, c int) error {
		s := &buf[w]
		p0, p1 := c*chunk, min(n, (c+1)*chunk)
		// The spread of the range's points, unless sel has that of
		// all of them.
		var sp *predSpread
		at := 0 // sp's index of point 0
		if banded {
			sp = &sel.spread
			if len(sp.fmin) != n {
				s.spread.rows(pm, off+p0, off+p1)
				sp, at = &s.spread, p0
			}
		}
		hits := make([]int, len(calibrationAlphas))
		for p := p0; p < p1; p++ {
			pt := pts[p]
			es, skip := entries.at(pt, self)
			var h []int
			if curve && pt.has {
				h = hits
			}
			if j := p - at; banded && skip == noSkip && sp.usable(j) {
				if se := sel.of(es); se != nil {
					lo, up, m, ok := s.banded(alpha, se, pm, off+p, sp.fmin[j], sp.fmax[j], pt.y, h)
					if ok {
						l.lo[p], l.up[p], l.m[p] = lo, up, m
						continue
					}
				}
			}
			if s.pred == nil {
				s.pred = make([]float64, preds.blocks())
			}
			preds.point(off+p, s.pred)
			s.vm, s.vp = jackknifeValues(es, s.pred, skip, keep, s.vm, s.vp)
			if h != nil {
				// Before jackknifePlus, which reorders the values and
				// maps NaN to infinities.
				countCovered(calibrationAlphas, pt.y, s.vm, s.vp, h)
			}
			l.lo[p], l.up[p] = interval.JackknifePlus(alpha, s.vm, s.vp)
			l.m[p] = len(s.vp)
		}
		counts[c] = hits
		return nil
	})
	if !curve {
		return l, nil
	}
	return l, counts
}

// curveOf is the calibration curve over calibrationAlphas from per-chunk
// coverage counts over total labelled points.
func curveOf(counts [][]int, total int) []CalibrationPoint {
	hits := make([]float64, len(calibrationAlphas))
	for _, h := range counts {
		for a, v := range h {
			hits[a] += float64(v)
		}
	}
	out := make([]CalibrationPoint, len(calibrationAlphas))
	for a, alpha := range calibrationAlphas {
		out[a] = CalibrationPoint{Alpha: alpha, Nominal: 1 - alpha, Coverage: num.Ratio(hits[a], float64(total))}
	}
	return out
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
func sequences(d *blocks.Dataset, pts []point, l limits, conf []*StepConformal) []SequenceResult {
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
		seqs[pt.seq].Steps = append(seqs[pt.seq].Steps, st)
	}
	return seqs
}

// widthWarnings warns when the jackknife+ intervals (summary s) are more
// than WideBound times wider than the in-sample residual intervals, or
// than split conformal on a calibration set (c, nil without one; DESIGN
// section 8): coverage alone would call such intervals good.
func widthWarnings(s *Summary, c *Conformal) []Warning {
	if s == nil || !(s.MeanLength > 0) {
		return nil
	}
	var out []Warning
	if ref := s.Naive.MeanLength; ref > 0 && s.MeanLength > WideBound*ref {
		out = append(out, Warning{Code: TooWide, Step: -1, Figure: s.MeanLength / ref, Bound: WideBound, Ratio: ref})
	}
	if c != nil {
		for _, k := range c.Kinds {
			if k.Kind == KindSplit && k.MeanLength > 0 && s.MeanLength > WideBound*k.MeanLength {
				out = append(out, Warning{Code: WiderThanCalibrated, Step: -1, Figure: s.MeanLength / k.MeanLength, Bound: WideBound, Ratio: k.MeanLength})
			}
		}
	}
	return out
}

// CoverageTolerance is the sampling error allowed when n values' coverage
// is compared with a level p: two binomial standard errors, at least one
// percentage point.
func CoverageTolerance(p float64, n int) float64 {
	return math.Max(0.01, 2*math.Sqrt(p*(1-p)/float64(max(1, n))))
}

// stepCoverageWarnings warns about the steps whose coverage in s falls
// below the 1 - 2 alpha the jackknife+ guarantees by more than sampling
// error (CoverageTolerance; steps with at least 20 values), and says when
// the model's test errors at those steps are much larger than its
// training errors (the in-sample residuals naive; not in a self-audit):
// the sign that it fits training noise there, which leave-one-out models
// started from the trained model keep in part.
func stepCoverageWarnings(s *Summary, naive map[forecast][]float64, self bool) []Warning {
	floor := 1 - 2*s.Alpha
	var low []int
	for t, c := range s.CoveragePerStep {
		n := s.PointsPerStep[t]
		if n >= 20 && c < floor-CoverageTolerance(floor, n) {
			low = append(low, t)
		}
	}
	if len(low) == 0 {
		return nil
	}
	// In-sample residual RMS per row.
	ss := make([]float64, len(s.CoveragePerStep))
	cnt := make([]float64, len(ss))
	for f, res := range naive {
		if f.T < len(ss) {
			for _, e := range res {
				ss[f.T] += e * e
				cnt[f.T]++
			}
		}
	}
	var out []Warning
	for _, t := range low {
		w := Warning{Code: StepCoverage, Step: t, Figure: s.CoveragePerStep[t], Bound: floor, Count: s.PointsPerStep[t]}
		if cnt[t] > 0 && !self {
			if in := math.Sqrt(ss[t] / cnt[t]); in > 0 {
				w.Ratio = s.RMSEPerStep[t] / in
			}
		}
		out = append(out, w)
	}
	return out
}

// summarize computes the metrics of DESIGN section 6 over the labelled
// points pts with intervals l (jackknife+ and in-sample); nil when no
// point is labelled. The interval metrics are kindSummary's, the one place
// they are computed; summarize adds the point predictions' errors, the
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
	jk := kindSummary(KindJackknife, lv, pts, l.lo, l.up, nil)
	// Naive coverage is |y - prediction| <= q: exact, where the float
	// limits prediction ± q could misjudge a target lying on the boundary
	// (in a self-audit one point per row does).
	nv := kindSummary(KindInSample, lv, pts, l.nlo, l.nup, l.nq)
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
// up per point) over the labelled points pts: coverage (overall, per row,
// joint per sequence), mean width of the finite intervals (overall, per
// row), the number of unbounded ones, the Winkler score at lv.alpha
// (width + 2/alpha times the miss, over finite intervals) and precision
// and recall of the threshold flags (lower < low, upper > high). With
// half-widths q (intervals symmetric about the prediction) a value is
// covered when |y - prediction| <= q, which the float limits could
// misjudge on the boundary.
func kindSummary(kind string, lv level, pts []point, lo, up, q []float64) KindSummary {
	alpha := lv.alpha
	nrow := 0
	for _, pt := range pts {
		if pt.has {
			nrow = max(nrow, pt.f.T+1)
		}
	}
	k := KindSummary{Kind: kind, CoveragePerStep: make([]float64, nrow), LengthPerStep: make([]float64, nrow)}
	cov, cnt, lens, lcnt := make([]float64, nrow), make([]float64, nrow), make([]float64, nrow), make([]float64, nrow)
	seqOK := map[int]bool{}
	var covered, n, lenSum, lenN, score float64
	var tl, th Threshold
	for p, pt := range pts {
		if !pt.has {
			continue
		}
		y, a, b, t := pt.y, lo[p], up[p], pt.f.T
		in := a <= y && y <= b
		if q != nil {
			in = math.Abs(y-pt.pred) <= q[p]
		}
		if _, seen := seqOK[pt.seq]; !seen {
			seqOK[pt.seq] = true
		}
		n++
		cnt[t]++
		if in {
			covered++
			cov[t]++
		} else {
			seqOK[pt.seq] = false
		}
		if math.IsInf(a, 0) || math.IsInf(b, 0) {
			k.Infinite++
		} else {
			w := b - a
			lenSum += w
			lenN++
			lens[t] += w
			lcnt[t]++
			if y < a {
				w += 2 / alpha * (a - y)
			}
			if y > b {
				w += 2 / alpha * (y - b)
			}
			score += w
		}
		if lv.low != nil {
			tally(&tl, a < *lv.low, y < *lv.low)
		}
		if lv.high != nil {
			tally(&th, b > *lv.high, y > *lv.high)
		}
	}
	k.Coverage = num.Ratio(covered, n)
	k.MeanLength = num.Ratio(lenSum, lenN)
	k.IntervalScore = num.Ratio(score, lenN)
	joint := 0
	for _, ok := range seqOK {
		if ok {
			joint++
		}
	}
	k.JointCoverage = num.Ratio(float64(joint), float64(len(seqOK)))
	k.Sequences = len(seqOK)
	for t := range nrow {
		k.CoveragePerStep[t] = num.Ratio(cov[t], cnt[t])
		k.LengthPerStep[t] = num.Ratio(lens[t], lcnt[t])
	}
	if lv.low != nil {
		tl.Threshold = *lv.low
		finish(&tl)
		k.Audit.Low = &tl
	}
	if lv.high != nil {
		th.Threshold = *lv.high
		finish(&th)
		k.Audit.High = &th
	}
	return k
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

func tally(t *Threshold, flag, real bool) {
	if flag {
		t.Flagged++
		if real {
			t.True++
		}
	}
	if real {
		t.Actual++
	}
}

func finish(t *Threshold) {
	t.Precision = num.Ratio(float64(t.True), float64(t.Flagged))
	t.Recall = num.Ratio(float64(t.True), float64(t.Actual))
}

// calibrationAlphas is the grid of the calibration curve.
var calibrationAlphas = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}

// coveredAt adds to hits[a] one for every level alphas[a] whose
// jackknife+ interval at a point (entries es, block predictions pred,
// leaving out training sequence skipSeq) covers y (countCovered).
func coveredAt(alphas []float64, y float64, es []entry, pred []float64, skip skipRule, hits []int) {
	vm, vp := jackknifeValues(es, pred, skip, nil, nil, nil)
	countCovered(alphas, y, vm, vp, hits)
}

// countCovered adds to hits[a] one for every level alphas[a] whose
// jackknife+ interval from V- = vm and V+ = vp covers y. The k-th
// smallest of V+ is at least y exactly when fewer than k values of V+ lie
// below y, and the k-th smallest of V- is at most y when at least k
// values of V- do not exceed it: two counts decide the coverage at every
// level. It reads the values before jackknifePlus, which maps NaN to
// infinities: a NaN value counts on neither side.
func countCovered(alphas []float64, y float64, vm, vp []float64, hits []int) {
	m, below, notAbove := len(vp), 0, 0
	for i, hi := range vp {
		if hi < y {
			below++
		}
		if vm[i] <= y {
			notAbove++
		}
	}
	coveredFromCounts(alphas, m, below, notAbove, hits)
}

// coveredFromCounts adds to hits[a] one for every level alphas[a] at
// which the jackknife+ interval from m values, below of V+ lying below y
// and notAbove of V- not exceeding it, covers y (countCovered).
func coveredFromCounts(alphas []float64, m, below, notAbove int, hits []int) {
	for a, alpha := range alphas {
		if below < interval.UpperRank(alpha, m) && notAbove >= interval.LowerRank(alpha, m) {
			hits[a]++
		}
	}
}

// calibrationCurve computes coverage against nominal level over the alpha
// grid from the residual entries and the perturbed predictions, over
// every labelled point: a subsample of every k-th point would alias with
// the sequence length (k a multiple of it picks one step only), and the
// two counts per point (coveredAt) cost no more than the intervals
// themselves.
func calibrationCurve(ctx context.Context, workers int, pts []point, preds perturbed, entries *residualSets, self bool) []CalibrationPoint {
	var chosen []int
	for p, pt := range pts {
		if pt.has {
			chosen = append(chosen, p)
		}
	}
	// Counts per chunk of points, added afterwards: integers, so the
	// result does not depend on the order.
	const chunk = 64
	nchunks := (len(chosen) + chunk - 1) / chunk
	counts := make([][]int, nchunks)
	bufs := make([][]float64, workers)
	_ = par.For(ctx, nchunks, workers, func(w, c int) error {
		if bufs[w] == nil {
			bufs[w] = make([]float64, preds.blocks())
		}
		hits := make([]int, len(calibrationAlphas))
		for _, p := range chosen[c*chunk : min(len(chosen), (c+1)*chunk)] {
			pt := pts[p]
			es, skip := entries.at(pt, self)
			coveredAt(calibrationAlphas, pt.y, es, preds.point(p, bufs[w]), skip, hits)
		}
		counts[c] = hits
		return nil
	})
	return curveOf(counts, len(chosen))
}
