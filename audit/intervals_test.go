package audit

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// The interval and metric arithmetic on plain slices, against figures
// worked out by hand.

// fiveBlocks is a point's residual entries from five sequence blocks
// (block b leaves out sequence b) and the five leave-one-block-out
// predictions there:
//
//	V- = pred - r = 9.5 9.4 9.6 8.1 9.3, sorted 8.1 9.3 9.4 9.5 9.6
//	V+ = pred + r = 10.5 11.4 10.0 12.1 9.9, sorted 9.9 10.0 10.5 11.4 12.1
var (
	fiveEntries = []interval.Residual{{Blk: 0, Seq: 0, R: 0.5}, {Blk: 1, Seq: 1, R: 1.0}, {Blk: 2, Seq: 2, R: 0.2}, {Blk: 3, Seq: 3, R: 2.0}, {Blk: 4, Seq: 4, R: 0.3}}
	fivePreds   = []float64{10.0, 10.4, 9.8, 10.1, 9.6}
)

func TestJackknifeAt(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct {
		name    string
		alpha   float64
		skip    int
		keep    func(int) bool
		lo, up  float64
		m       int
		predNaN int // block whose prediction is NaN (not estimated), or -1
	}{
		// m = 5: ranks floor(0.4·6) = 2 of V-, ceil(0.6·6) = 4 of V+.
		{name: "alpha 0.4", alpha: 0.4, skip: -1, lo: 9.3, up: 11.4, m: 5, predNaN: -1},
		// floor(1.2) = 1, ceil(4.8) = 5: the extremes.
		{name: "alpha 0.2", alpha: 0.2, skip: -1, lo: 8.1, up: 12.1, m: 5, predNaN: -1},
		// floor(0.6) = 0, ceil(5.4) = 6 > m: unbounded both ways.
		{name: "alpha 0.1", alpha: 0.1, skip: -1, lo: -inf, up: inf, m: 5, predNaN: -1},
		// floor(3) = 3, ceil(3) = 3: the medians.
		{name: "alpha 0.5", alpha: 0.5, skip: -1, lo: 9.4, up: 10.5, m: 5, predNaN: -1},
		// Self-audit of sequence 3: m = 4, V- 9.3 9.4 9.5 9.6, V+ 9.9 10.0
		// 10.5 11.4; ranks floor(0.4·5) = 2, ceil(0.6·5) = 3.
		{name: "self", alpha: 0.4, skip: 3, lo: 9.4, up: 10.5, m: 4, predNaN: -1},
		// Blocks 0-2 only (block 4 not estimated): m = 3, V- 9.4 9.5 9.6,
		// V+ 10.0 10.5 11.4; ranks floor(0.25·4) = 1, ceil(0.75·4) = 3.
		{name: "keep", alpha: 0.25, skip: -1, keep: func(b int) bool { return b < 3 }, lo: 9.4, up: 11.4, m: 3, predNaN: 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pred := slices.Clone(fivePreds)
			if c.predNaN >= 0 {
				pred[c.predNaN] = math.NaN()
			}
			lo, up, m, _, _ := jackknifeAt(c.alpha, fiveEntries, pred, c.skip, c.keep, nil, nil)
			if m != c.m || !near(lo, c.lo) || !near(up, c.up) {
				t.Errorf("[%v, %v] from %d, want [%v, %v] from %d", lo, up, m, c.lo, c.up, c.m)
			}
		})
	}
}

// jackknifeAt is the jackknife+ interval at one point (docs/design.md, section 5.4), the test's reference:
// over the m residual entries es of the point's forecast, leaving out
// those of training sequence skipSeq (-1: none) and those of blocks keep
// rejects (keep nil: none), with pred[b] the prediction of block b's model
// at the point, V- = {pred[b] - r} and V+ = {pred[b] + r}; lo is the
// floor(alpha(m+1))-th smallest of V- (-Inf below 1), up the
// ceil((1-alpha)(m+1))-th smallest of V+ (+Inf above m). vm and vp are
// scratch space, returned for reuse.
func jackknifeAt(alpha float64, es []interval.Residual, pred []float64, skipSeq int, keep func(blk int) bool, vm, vp []float64) (lo, up float64, m int, vm2, vp2 []float64) {
	vm, vp = interval.JackknifeValues(es, pred, interval.Skip{Seq: skipSeq, Blk: -1}, keep, vm, vp)
	lo, up = interval.JackknifePlus(alpha, vm, vp)
	return lo, up, len(vp), vm, vp
}

// coveredAt adds to hits[a] one for every level alphas[a] whose
// jackknife+ interval at a point (entries es, block predictions pred,
// leaving out what skip drops) covers y (interval.CountCovered).
func coveredAt(alphas []float64, y float64, es []interval.Residual, pred []float64, skip interval.Skip, hits []int) {
	vm, vp := interval.JackknifeValues(es, pred, skip, nil, nil, nil)
	interval.CountCovered(alphas, y, vm, vp, hits)
}

// calibrationCurve is the test's reference calibration curve: coverage against nominal level over the alpha
// grid from the residual entries and the perturbed predictions, over
// every labelled point: a subsample of every k-th point would alias with
// the sequence length (k a multiple of it picks one step only), and the
// two counts per point (coveredAt) cost no more than the intervals
// themselves.
func calibrationCurve(ctx context.Context, workers int, pts []point, preds perturbed, entries *residualSets, self bool) []interval.CalibrationPoint {
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

// near compares within 1e-12 (equal infinities are close).
func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

// TestJackknifeLimits: every point reads its own column of the perturbed
// predictions (offset off), and a self-audit leaves out the point's own
// sequence.
func TestJackknifeLimits(t *testing.T) {
	t.Parallel()
	f := forecast{T: 0}
	entries := map[forecast][]interval.Residual{f: fiveEntries}
	// Columns: an unused one (off = 1), the five-block point, the same
	// shifted by +1.
	preds := make(predMatrix, 5)
	for b, v := range fivePreds {
		preds[b] = []float64{-100, v, v + 1}
	}
	pts := []point{{seq: 0, f: f}, {seq: 3, f: f}}
	l := jackknifeLimits(t.Context(), 2, 0.4, pts, 1, preds, byPosition(entries), false, nil)
	want := [][2]float64{{9.3, 11.4}, {10.3, 12.4}}
	for p, w := range want {
		if !near(l.lo[p], w[0]) || !near(l.up[p], w[1]) || l.m[p] != 5 {
			t.Errorf("point %d: [%v, %v] from %d, want %v from 5", p, l.lo[p], l.up[p], l.m[p], w)
		}
	}
	l = jackknifeLimits(t.Context(), 1, 0.4, pts[1:], 1, preds, byPosition(entries), true, nil)
	if !near(l.lo[0], 9.4) || !near(l.up[0], 10.5) || l.m[0] != 4 {
		t.Errorf("self-audit of sequence 3: [%v, %v] from %d, want [9.4, 10.5] from 4", l.lo[0], l.up[0], l.m[0])
	}
}

// TestNaiveLimits: prediction ± the ceil((1-alpha)(m+1))-th smallest
// in-sample residual of the point's forecast; unbounded without any.
func TestNaiveLimits(t *testing.T) {
	t.Parallel()
	naive := map[forecast][]float64{{T: 0}: {0.1, 0.4, 0.2, 0.3}}
	pts := []point{{f: forecast{T: 0}, pred: 5}, {f: forecast{T: 1}, pred: 5}}
	var l limits
	// alpha 0.2, m = 4: the ceil(0.8·5) = 4th smallest, 0.4.
	naiveLimits(0.2, naive, nil, pts, &l)
	if !near(l.nlo[0], 4.6) || !near(l.nup[0], 5.4) || l.nq[0] != 0.4 {
		t.Errorf("[%v, %v] half-width %v, want [4.6, 5.4] 0.4", l.nlo[0], l.nup[0], l.nq[0])
	}
	if !math.IsInf(l.nlo[1], -1) || !math.IsInf(l.nup[1], 1) {
		t.Errorf("forecast without residuals: [%v, %v], want unbounded", l.nlo[1], l.nup[1])
	}
}

// TestKindSummary: the glue over interval.Metrics counts the labelled
// points only, each at its own sequence and row, and half-widths decide
// coverage of symmetric intervals: |y - pred| <= q even where the limits
// say otherwise.
func TestKindSummary(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	pt := func(seq, row int, y float64, has bool) point {
		return point{seq: seq, f: forecast{T: row}, y: y, has: has}
	}
	pts := []point{pt(0, 0, 5, true), pt(0, 1, 9.5, true), pt(1, 0, 0.5, true), pt(1, 1, 2, true), pt(2, 0, 0, false), pt(2, 1, 10, true)}
	lo := []float64{4, 7, 0, -inf, 0, 8}
	up := []float64{6, 9, 3, 4, 0, 12}
	low, high := 1.0, 9.0
	k := kindSummary(interval.KindJackknife, level{alpha: 0.2, low: &low, high: &high}, pts, lo, up, nil)
	// The figures of interval's TestMetrics, which adds the same values.
	if k.Kind != interval.KindJackknife || !near(k.Coverage, 0.8) || !near(k.JointCoverage, 2.0/3) || k.Sequences != 3 ||
		!near(k.MeanLength, 2.75) || !near(k.IntervalScore, 4) || k.Infinite != 1 ||
		!slices.EqualFunc(k.CoveragePerStep, []float64{1, 2.0 / 3}, near) || !slices.EqualFunc(k.LengthPerStep, []float64{2.5, 3}, near) ||
		k.Audit.Low == nil || k.Audit.Low.Flagged != 2 || k.Audit.High == nil || k.Audit.High.Actual != 2 {
		t.Errorf("got %+v", k)
	}

	sym := []point{{seq: 0, f: forecast{T: 0}, pred: 1, y: 2, has: true}}
	k = kindSummary(interval.KindSplit, level{alpha: 0.1}, sym, []float64{1}, []float64{1}, []float64{1})
	if k.Coverage != 1 || k.Audit.Low != nil || k.Audit.High != nil {
		t.Errorf("symmetric: coverage %v audit %+v, want 1 and no thresholds", k.Coverage, k.Audit)
	}
}

// TestSummarize: the point errors and gaps summarize adds to kindSummary,
// and the per-horizon figures of a model with two horizons.
func TestSummarize(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	pts := []point{
		{seq: 0, f: forecast{T: 0, H: 0}, pred: 1, y: 2, has: true},  // error 1, covered, width 4
		{seq: 0, f: forecast{T: 0, H: 1}, pred: 3, y: 0, has: true},  // error 3, missed, width 2
		{seq: 0, f: forecast{T: 1, H: 0}, pred: 2, y: 2, has: true},  // error 0, covered, unbounded
		{seq: 0, f: forecast{T: 1, H: 1}, pred: 0, y: 0, has: false}, // unlabelled
	}
	l := limits{lo: []float64{0, 2, -inf, 0}, up: []float64{4, 4, 5, 0},
		nlo: []float64{1, 2, 1, 0}, nup: []float64{3, 4, 3, 0}, nq: []float64{1, 1, 1, 1}}
	s := summarize(level{alpha: 0.1}, 2, pts, l)
	// RMSE sqrt((1 + 9 + 0)/3); per row sqrt(10/2) and 0. Naive: |y -
	// pred| <= 1 at points 0 and 2. Gap: mean width 3 against naive 2.
	if s.Points != 3 || !near(s.RMSE, math.Sqrt(10.0/3)) || !slices.EqualFunc(s.RMSEPerStep, []float64{math.Sqrt(5), 0}, near) ||
		!near(s.Coverage, 2.0/3) || !near(s.Naive.Coverage, 2.0/3) || !near(s.Gap, 1) ||
		!slices.EqualFunc(s.GapPerStep, []float64{1, math.NaN()}, func(a, b float64) bool { return near(a, b) || (a != a && b != b) }) ||
		!slices.Equal(s.PointsPerStep, []int{2, 1}) {
		t.Errorf("summary %+v", s)
	}
	// Horizon 0: points 0 and 2, both covered, one finite (4); horizon
	// 1: point 1, missed, width 2.
	if !slices.Equal(s.PointsPerHorizon, []int{2, 1}) || !slices.Equal(s.CoveragePerHorizon, []float64{1, 0}) || !slices.Equal(s.LengthPerHorizon, []float64{4, 2}) {
		t.Errorf("per horizon: %v %v %v", s.PointsPerHorizon, s.CoveragePerHorizon, s.LengthPerHorizon)
	}
	if c, w := coverOf(pts, l); !near(c, 2.0/3) || !near(w, 3) {
		t.Errorf("coverOf: %v %v, want 2/3 and 3", c, w)
	}
	if summarize(level{alpha: 0.1}, 1, pts[3:], l) != nil {
		t.Error("a summary without labelled points")
	}
}

// TestCalibrationCurveByHand: the five-block point at three targets. Over
// the grid the jackknife+ ranks of m = 5 give: alpha 0.05-0.15
// unbounded; 0.2-0.3 [8.1, 12.1]; 0.35-0.45 [9.3, 11.4]; 0.5 [9.4, 10.5].
func TestCalibrationCurveByHand(t *testing.T) {
	t.Parallel()
	f := forecast{T: 0}
	entries := map[forecast][]interval.Residual{f: fiveEntries}
	ys := []float64{11, 12, 9}
	for _, c := range []struct {
		y    float64
		hits []int
	}{
		{11, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
		{12, []int{1, 1, 1, 1, 1, 1, 0, 0, 0, 0}},
		{9, []int{1, 1, 1, 1, 1, 1, 0, 0, 0, 0}},
	} {
		hits := make([]int, len(calibrationAlphas))
		coveredAt(calibrationAlphas, c.y, fiveEntries, fivePreds, noSkip, hits)
		if !slices.Equal(hits, c.hits) {
			t.Errorf("y %v: covered %v, want %v", c.y, hits, c.hits)
		}
	}
	preds := make(predMatrix, 5)
	for b, v := range fivePreds {
		preds[b] = []float64{v, v, v, v}
	}
	pts := []point{{f: f, y: ys[0], has: true}, {f: f, y: ys[1], has: true}, {f: f}, {f: f, y: ys[2], has: true}}
	curve := calibrationCurve(t.Context(), 2, pts, preds, byPosition(entries), false)
	want := []float64{1, 1, 1, 1, 1, 1, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}
	for a, c := range curve {
		if c.Alpha != calibrationAlphas[a] || !near(c.Nominal, 1-c.Alpha) || !near(c.Coverage, want[a]) {
			t.Errorf("alpha %v: %+v, want coverage %v", calibrationAlphas[a], c, want[a])
		}
	}
}

// TestCalibrateByHand: nine calibration values at one forecast with
// |residuals| 1..9 and jackknife+ intervals pred ± 1, and a test forecast
// without calibration values. At alpha 0.2 the conformal rank is
// ceil(0.8·10) = 8: half-width 8, scores |y|/1 = 1..9 so scale 8; the
// forecast without values (row 1) is grouped with row 0 (interval.GroupRows:
// a group needs GroupValues(0.2) = 9), so both take the group's nine: the same 8 and 8; with
// L = 2 forecasts per test sequence Bonferroni takes alpha 0.1, rank
// ceil(0.9·10) = 9: half-width 9, and does not pool.
func TestCalibrateByHand(t *testing.T) {
	t.Parallel()
	f0, f1 := forecast{T: 0}, forecast{T: 1}
	var cal []point
	var cl limits
	for k := 1; k <= 9; k++ {
		y := float64(k)
		if k%2 == 0 {
			y = -y
		}
		cal = append(cal, point{seq: k, f: f0, pred: 0, y: y, has: true})
		cl.lo, cl.up, cl.sd = append(cl.lo, -1), append(cl.up, 1), append(cl.sd, 1)
	}
	cl.sd[8] = 10
	cal = append(cal, point{seq: 10, f: f0}) // unlabelled
	cl.lo, cl.up, cl.sd = append(cl.lo, 0), append(cl.up, 0), append(cl.sd, 1)
	test := []point{{seq: 0, f: f0, pred: 10}, {seq: 0, f: f1, pred: 20}}
	c := calibrate(0.2, 0, cal, cl, test)
	if c.values != 9 || c.half[f0] != 8 || c.scale[f0] != 8 || c.half[f1] != 8 || c.scale[f1] != 8 || len(c.few) != 0 || !slices.Equal(c.pooled, []int{0, 1}) {
		t.Fatalf("calibration: %d values, half %v, scale %v, few %v, pooled %v", c.values, c.half, c.scale, c.few, c.pooled)
	}
	// Only |y| = 1 lies in its jackknife+ interval [-1, 1].
	if len(c.forecasts) != 2 || c.forecasts[0].M != 9 || !near(c.forecasts[0].JackknifeCoverage, 1.0/9) || c.forecasts[1].M != 0 || c.forecasts[0].Pooled != 9 || c.forecasts[1].Pooled != 9 {
		t.Errorf("forecasts %+v", c.forecasts)
	}
	// Normalised scores |y| / scale: 1..8 at scale 1 and 9/10 = 0.9, rank
	// 8 of them 7 (sorted 0.9, 1, ..., 8), for both rows (one group); at
	// the calibration values 0 ± 7 scale covers |y| 1..7 and 9 (± 70):
	// 8/9, mean width (8 x 14 + 140)/9 = 28.
	if c.norm[f0] != 7 || c.norm[f1] != 7 {
		t.Errorf("normalised quantiles %v, want 7 and 7", c.norm)
	}
	if g := c.figs[3]; g.Kind != interval.KindNormalised || !g.Guaranteed || !near(g.Coverage, 8.0/9) || !near(g.MeanWidth, 28) {
		t.Errorf("normalised figures %+v", g)
	}
	// The kinds at the calibration values: jackknife+ [-1, 1] covers
	// 1/9, width 2; split 0 ± 8 and conformalized jackknife+ [-8, 8]
	// cover 8/9 (|y| <= 8), width 16.
	for i, w := range []struct {
		kind       string
		guaranteed bool
		cov, width float64
	}{{interval.KindJackknife, false, 1.0 / 9, 2}, {interval.KindConformalJackknife, true, 8.0 / 9, 16}, {interval.KindSplit, true, 8.0 / 9, 16}} {
		g := c.figs[i]
		if g.Kind != w.kind || g.Guaranteed != w.guaranteed || g.Values != 9 || !near(g.Coverage, w.cov) || !near(g.MeanWidth, w.width) || g.Unbounded != 0 {
			t.Errorf("calibration figures %d: %+v, want %s coverage %v width %v", i, g, w.kind, w.cov, w.width)
		}
	}
	jk := limits{lo: []float64{9, 19}, up: []float64{12, 21}}
	cd := calibratedLimits(0.2, test, []int{2}, c, jk)
	inf := math.Inf(1)
	for _, x := range []struct {
		name   string
		l      limits
		lo, up [2]float64
	}{
		{"split", cd.split, [2]float64{2, 12}, [2]float64{18, 28}},
		{"bonferroni", cd.bonf, [2]float64{1, -inf}, [2]float64{19, inf}},
		// The jackknife+ sides 1 and 2 scaled by 8 about 10; 1 and 1
		// about 20.
		{"conformalized jackknife+", cd.cj, [2]float64{2, 12}, [2]float64{26, 28}},
	} {
		for p := range 2 {
			if x.l.lo[p] != x.lo[p] || x.l.up[p] != x.up[p] {
				t.Errorf("%s point %d: [%v, %v], want [%v, %v]", x.name, p, x.l.lo[p], x.l.up[p], x.lo[p], x.up[p])
			}
		}
	}
	if cd.bonInf != 1 {
		t.Errorf("%d unbounded Bonferroni intervals, want 1", cd.bonInf)
	}
}

// TestLimitsAndCurve: the one-pass limits and calibration curve
// (limitsAndCurve, scanLimits) equal a brute force written out here: per
// point, the jackknife+ limits of its forecast's residuals leaving out its
// own sequence in a self-audit, and per level of the grid the fraction of
// labelled points inside that level's limits; on random predictions over
// 600 points (more than one chunk), two forecasts, unlabelled points and
// a self-audit's left-out sequences.
func TestLimitsAndCurve(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	const nb, np = 40, 600
	fs := []forecast{{T: 0}, {T: 1, H: 1}}
	entries := map[forecast][]interval.Residual{}
	for b := 0; b < nb; b++ {
		for j, f := range fs {
			if (b+j)%7 != 0 {
				entries[f] = append(entries[f], interval.Residual{Blk: b, Seq: b, R: math.Abs(r.NormFloat64())})
			}
		}
	}
	preds := make(predMatrix, nb)
	for b := range preds {
		preds[b] = make([]float64, np)
		for p := range preds[b] {
			preds[b][p] = 0.1*r.NormFloat64() + float64(p%5)
		}
	}
	pts := make([]point, np)
	for p := range pts {
		pts[p] = point{seq: p % nb, f: fs[p%2], y: float64(p%5) + r.NormFloat64(), has: p%9 != 0}
	}
	// brute returns the limits of point p at level alpha.
	brute := func(p int, alpha float64, self bool) (lo, up float64, m int) {
		var vm, vp []float64
		for _, e := range entries[pts[p].f] {
			if self && e.Seq == pts[p].seq {
				continue
			}
			vm = append(vm, preds[e.Blk][p]-e.R)
			vp = append(vp, preds[e.Blk][p]+e.R)
		}
		lo, up = interval.JackknifePlus(alpha, vm, vp)
		return lo, up, len(vp)
	}
	for _, self := range []bool{false, true} {
		l, curve := limitsAndCurve(t.Context(), 2, 0.2, pts, preds, byPosition(entries), self)
		for p := range pts {
			lo, up, m := brute(p, 0.2, self)
			if l.lo[p] != lo || l.up[p] != up || l.m[p] != m {
				t.Fatalf("self %v, point %d: [%v, %v] from %d, brute force [%v, %v] from %d", self, p, l.lo[p], l.up[p], l.m[p], lo, up, m)
			}
		}
		for a, alpha := range calibrationAlphas {
			in, n := 0, 0
			for p, pt := range pts {
				if !pt.has {
					continue
				}
				n++
				if lo, up, _ := brute(p, alpha, self); lo <= pt.y && pt.y <= up {
					in++
				}
			}
			if want := float64(in) / float64(n); curve[a].Coverage != want {
				t.Errorf("self %v, alpha %v: coverage %v, brute force %v", self, alpha, curve[a].Coverage, want)
			}
		}
		if curve[0].Coverage == curve[len(curve)-1].Coverage {
			t.Errorf("self %v: a flat curve %v tests nothing", self, curve)
		}
	}
}
