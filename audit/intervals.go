package audit

import (
	"math"
)

// limits are the intervals of every evaluated point.
type limits struct {
	lo, up   []float64
	nlo, nup []float64
	nq       []float64 // naive half-widths
	m        []int
}

// intervalsFor computes the jackknife+ limits of every point from the
// perturbed predictions preds[b][p] and the residual entries (restricted
// to the blocks keep accepts when keep is non-nil). In a self-audit a
// point's own sequence's residuals are left out.
func (r *run) intervalsFor(alpha float64, preds [][]float64, keep func(blk int) bool) limits {
	return r.jackknifeLimits(alpha, preds, keep, r.points, 0, r.self)
}

// jackknifeLimits computes the jackknife+ limits of the points pts, whose
// perturbed predictions are preds[b][off+p]; self leaves out a point's own
// training sequence.
func (r *run) jackknifeLimits(alpha float64, preds [][]float64, keep func(blk int) bool, pts []point, off int, self bool) limits {
	n := len(pts)
	l := limits{lo: make([]float64, n), up: make([]float64, n), m: make([]int, n)}
	const chunk = 256
	chunks := (n + chunk - 1) / chunk
	vms := make([][]float64, r.workers)
	vps := make([][]float64, r.workers)
	_ = r.parallel(chunks, func(w, c int) error {
		for p := c * chunk; p < min(n, (c+1)*chunk); p++ {
			pt := pts[p]
			vm, vp := vms[w][:0], vps[w][:0]
			for _, e := range r.entries[pt.f] {
				if (self && e.seq == pt.seq) || (keep != nil && !keep(e.blk)) {
					continue
				}
				f := preds[e.blk][off+p]
				vm = append(vm, f-e.r)
				vp = append(vp, f+e.r)
			}
			l.lo[p], l.up[p] = jackknifePlus(alpha, vm, vp)
			l.m[p] = len(vp)
			vms[w], vps[w] = vm, vp
		}
		return nil
	})
	return l
}

// intervals fills the result's sequences, summary and calibration.
func (r *run) intervals(preds [][]float64) {
	alpha := r.opt.Alpha
	l := r.intervalsFor(alpha, preds, nil)
	// Naive in-sample intervals: prediction ± the per-(row, horizon)
	// quantile of the training residuals at theta_hat.
	halfw := map[forecast]float64{}
	for f, v := range r.naive {
		halfw[f] = upperQuantile(alpha, v)
	}
	l.nlo, l.nup, l.nq = make([]float64, len(r.points)), make([]float64, len(r.points)), make([]float64, len(r.points))
	for p, pt := range r.points {
		q, ok := halfw[pt.f]
		if !ok {
			q = math.Inf(1)
		}
		l.nlo[p], l.nup[p], l.nq[p] = pt.pred-q, pt.pred+q, q
	}
	// Sequences.
	seqs := make([]SequenceResult, r.eval.Len())
	for i, s := range r.eval.Seqs {
		seqs[i].ID = s.ID
	}
	for p, pt := range r.points {
		s := r.eval.Seqs[pt.seq]
		st := StepResult{Row: pt.f.T, Step: s.Steps[pt.f.T], Horizon: pt.f.H, Prediction: pt.pred,
			Lower: l.lo[p], Upper: l.up[p], NaiveLower: l.nlo[p], NaiveUpper: l.nup[p], M: l.m[p]}
		if pt.has {
			y := pt.y
			st.Target = &y
		}
		seqs[pt.seq].Steps = append(seqs[pt.seq].Steps, st)
	}
	r.res.Sequences = seqs
	r.res.Summary = r.summary(l)
	if r.res.Summary != nil {
		r.res.Calibration = r.calibration(preds)
		r.stepCoverageWarning(r.res.Summary)
	}
	if r.cal != nil {
		r.conformal(preds, l)
	}
	r.widthWarning()
}

// widthWarning warns when the jackknife+ intervals are more than WideBound
// times wider than the in-sample residual intervals, or than split
// conformal on a calibration set (DESIGN section 8): coverage alone would
// call such intervals good.
func (r *run) widthWarning() {
	s := r.res.Summary
	if s == nil || !(s.MeanLength > 0) {
		return
	}
	if ref := s.Naive.MeanLength; ref > 0 && s.MeanLength > WideBound*ref {
		r.warn(Warning{Code: TooWide, Step: -1, Figure: s.MeanLength / ref, Bound: WideBound, Ratio: ref})
	}
	if c := r.res.Conformal; c != nil {
		for _, k := range c.Kinds {
			if k.Kind == KindSplit && k.MeanLength > 0 && s.MeanLength > WideBound*k.MeanLength {
				r.warn(Warning{Code: WiderThanCalibrated, Step: -1, Figure: s.MeanLength / k.MeanLength, Bound: WideBound, Ratio: k.MeanLength})
			}
		}
	}
}

// CoverageTolerance is the sampling error allowed when n values' coverage
// is compared with a level p: two binomial standard errors, at least one
// percentage point.
func CoverageTolerance(p float64, n int) float64 {
	return math.Max(0.01, 2*math.Sqrt(p*(1-p)/float64(max(1, n))))
}

// stepCoverageWarning warns about the steps whose coverage falls below the
// 1 - 2 alpha the jackknife+ guarantees by more than sampling error
// (CoverageTolerance; steps with at least 20 values), and says when
// the model's test errors at those steps are much larger than its training
// errors: the sign that it fits training noise there, which leave-one-out
// models started from the trained model keep in part.
func (r *run) stepCoverageWarning(s *Summary) {
	floor := 1 - 2*s.Alpha
	var low []int
	for t, c := range s.CoveragePerStep {
		n := s.PointsPerStep[t]
		if n >= 20 && c < floor-CoverageTolerance(floor, n) {
			low = append(low, t)
		}
	}
	if len(low) == 0 {
		return
	}
	// In-sample residual RMS per row.
	ss := make([]float64, len(s.CoveragePerStep))
	cnt := make([]float64, len(ss))
	for f, res := range r.naive {
		if f.T < len(ss) {
			for _, e := range res {
				ss[f.T] += e * e
				cnt[f.T]++
			}
		}
	}
	for _, t := range low {
		w := Warning{Code: StepCoverage, Step: t, Figure: s.CoveragePerStep[t], Bound: floor, Count: s.PointsPerStep[t]}
		if cnt[t] > 0 && !r.self {
			if in := math.Sqrt(ss[t] / cnt[t]); in > 0 {
				w.Ratio = s.RMSEPerStep[t] / in
			}
		}
		r.warn(w)
	}
}

// summary computes the metrics of DESIGN section 6 over the labelled
// points; nil when there are none. The interval metrics of the jackknife+
// and in-sample intervals are kindSummary's, the one place they are
// computed; summary adds the point predictions' errors and the gaps.
func (r *run) summary(l limits) *Summary {
	nrow, labelled := 0, 0
	for _, pt := range r.points {
		if pt.has {
			labelled++
			nrow = max(nrow, pt.f.T+1)
		}
	}
	if labelled == 0 {
		return nil
	}
	jk := r.kindSummary(KindJackknife, l.lo, l.up, nil)
	// Naive coverage is |y - prediction| <= q: exact, where the float
	// limits prediction ± q could misjudge a target lying on the boundary
	// (in a self-audit one point per row does).
	nv := r.kindSummary(KindInSample, l.nlo, l.nup, l.nq)
	s := &Summary{Alpha: r.opt.Alpha, Points: labelled,
		Coverage: jk.Coverage, CoveragePerStep: jk.CoveragePerStep, JointCoverage: jk.JointCoverage,
		MeanLength: jk.MeanLength, LengthPerStep: jk.LengthPerStep, Infinite: jk.Infinite,
		IntervalScore: jk.IntervalScore, Audit: jk.Audit,
		Naive: NaiveSummary{Coverage: nv.Coverage, CoveragePerStep: nv.CoveragePerStep,
			MeanLength: nv.MeanLength, LengthPerStep: nv.LengthPerStep},
		PointsPerStep: make([]int, nrow), RMSEPerStep: make([]float64, nrow), GapPerStep: make([]float64, nrow),
	}
	sse, sseStep := 0.0, make([]float64, nrow)
	for _, pt := range r.points {
		if pt.has {
			e := (pt.y - pt.pred) * (pt.y - pt.pred)
			sse += e
			sseStep[pt.f.T] += e
			s.PointsPerStep[pt.f.T]++
		}
	}
	s.RMSE = math.Sqrt(sse / float64(labelled))
	for t := range nrow {
		s.RMSEPerStep[t] = math.Sqrt(ratio(sseStep[t], float64(s.PointsPerStep[t])))
		s.GapPerStep[t] = s.LengthPerStep[t] - s.Naive.LengthPerStep[t]
	}
	s.Gap = s.MeanLength - s.Naive.MeanLength
	if r.io.K > 1 {
		s.CoveragePerHorizon, s.LengthPerHorizon, s.PointsPerHorizon = perHorizon(r.io.K, r.points, l)
	}
	return s
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
		coverage[h] = ratio(covered[h], float64(n[h]))
		length[h] = ratio(lsum[h], lcnt[h])
	}
	return coverage, length, n
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
	t.Precision = ratio(float64(t.True), float64(t.Flagged))
	t.Recall = ratio(float64(t.True), float64(t.Actual))
}

// ratio is a/b, NaN when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// calibrationAlphas is the grid of the calibration curve.
var calibrationAlphas = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}

// calibration computes coverage against nominal level over the alpha grid
// from the same residuals and perturbed predictions, over every labelled
// point: a subsample of every k-th point would alias with the sequence
// length (k a multiple of it picks one step only), and the two counts per
// point below cost no more than the intervals themselves.
func (r *run) calibration(preds [][]float64) []CalibrationPoint {
	var chosen []int
	for p, pt := range r.points {
		if pt.has {
			chosen = append(chosen, p)
		}
	}
	// Counts per chunk of points, added afterwards: integers, so the
	// result does not depend on the order.
	const chunk = 64
	nchunks := (len(chosen) + chunk - 1) / chunk
	counts := make([][]int, nchunks)
	_ = r.parallel(nchunks, func(_, c int) error {
		hits := make([]int, len(calibrationAlphas))
		for _, p := range chosen[c*chunk : min(len(chosen), (c+1)*chunk)] {
			// The k-th smallest of V+ is at least y exactly when fewer
			// than k values of V+ lie below y, and the k-th smallest of
			// V- is at most y when at least k values of V- do not exceed
			// it: two counts decide the coverage at every level.
			pt := r.points[p]
			y := pt.y
			m, below, notAbove := 0, 0, 0
			for _, e := range r.entries[pt.f] {
				if r.self && e.seq == pt.seq {
					continue
				}
				f := preds[e.blk][p]
				m++
				if f+e.r < y {
					below++
				}
				if f-e.r <= y {
					notAbove++
				}
			}
			for a, alpha := range calibrationAlphas {
				if below < upperRank(alpha, m) && notAbove >= lowerRank(alpha, m) {
					hits[a]++
				}
			}
		}
		counts[c] = hits
		return nil
	})
	hits := make([]float64, len(calibrationAlphas))
	for _, h := range counts {
		for a, v := range h {
			hits[a] += float64(v)
		}
	}
	total := float64(len(chosen))
	out := make([]CalibrationPoint, len(calibrationAlphas))
	for a, alpha := range calibrationAlphas {
		out[a] = CalibrationPoint{Alpha: alpha, Nominal: 1 - alpha, Coverage: ratio(hits[a], total)}
	}
	return out
}
