package audit

import (
	"context"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// The jackknife+ base of ACI and AgACI (DESIGN sections 5 and 9). Gibbs
// and Candès's ACI needs a family of intervals nested in the working
// level a: with the jackknife+ base the member at level 1 - a is the
// jackknife+ interval recomputed at miscoverage a from the point's
// leave-one-block-out sets V- and V+ (the floor(a(m+1))-th smallest of
// V- and the ceil((1-a)(m+1))-th smallest of V+), not the interval at
// alpha scaled about the prediction. At a = alpha it is the audit's
// jackknife+ interval; a <= 0 gives the whole line, a >= 1 (or a level
// at which the two limits cross) the empty set.

// jackknifeSets gives the leave-one-block-out sets V- and V+ of test
// point i, each sorted ascending, NaN mapped to -Inf in V- and +Inf in
// V+ as jackknifePlus maps them.
type jackknifeSets func(i int) (vm, vp []float64)

// setsRep is an influence representation that can give the jackknife+
// sets of the test points beside their limits (the dense solvers'
// stepsRep; the low-rank table keeps its sets in chunks and does not).
type setsRep interface {
	limitsAndSets(ctx context.Context, p *problem, pts []point) (limits, []interval.CalibrationPoint, jackknifeSets, error)
}

// limitsAndSets is limits for the test points pts and their sets, built
// when asked for, per point, from the same forward passes at every
// block's model: the adaptive kinds on the jackknife base do not run the
// intervals phase a second time.
func (r *stepsRep) limitsAndSets(ctx context.Context, p *problem, pts []point) (limits, []interval.CalibrationPoint, jackknifeSets, error) {
	preds, err := perturbedPredictions(ctx, p, &evaluation{test: pts}, "intervals", r.inf.delta, nil)
	if err != nil {
		return limits{}, nil, nil, err
	}
	entries := p.sets(r.loo.entries)
	l, curve := limitsAndCurve(ctx, p.workers, p.opt.Alpha, pts, preds, entries, p.self)
	buf := make([]float64, preds.blocks())
	sets := func(i int) ([]float64, []float64) {
		es, skip := entries.at(pts[i], p.self)
		vm, vp := jackknifeValues(es, preds.point(i, buf), skip, nil, nil, nil)
		interval.InfForNaN(vm, vp)
		slices.Sort(vm)
		slices.Sort(vp)
		return vm, vp
	}
	return l, curve, sets, nil
}

// testLimits is rep's limits of the test points of ev and, when the
// adaptive kinds run on the jackknife base, the points' jackknife+ sets
// (nil otherwise, and with a note when rep keeps no sets: the scaled
// interval is used instead).
func testLimits(ctx context.Context, p *problem, rep influenceRep, ev *evaluation) (limits, []interval.CalibrationPoint, jackknifeSets, string, error) {
	if a := p.opt.Adaptive; a == nil || a.Base != BaseJackknife {
		l, curve, err := rep.limits(ctx, p, ev, false)
		return l, curve, nil, "", err
	}
	if r, ok := rep.(setsRep); ok {
		l, curve, sets, err := r.limitsAndSets(ctx, p, ev.test)
		return l, curve, sets, "", err
	}
	l, curve, err := rep.limits(ctx, p, ev, false)
	return l, curve, nil, "The low-rank solver keeps no per-block predictions at the test points: ACI and AgACI on the jackknife base scale the jackknife+ interval about the prediction instead of recomputing it at their working level.", err
}

// jackknifeLevel is the jackknife+ interval at miscoverage a (DESIGN
// section 5's ranks) from the sorted sets vm and vp of a point whose
// prediction is pred: the whole line at a <= 0 (or when a rank falls
// outside 1..m), empty (both limits at pred) at a >= 1 or when the
// lower limit exceeds the upper.
func jackknifeLevel(pred, a float64, vm, vp []float64) (lo, up float64, empty bool) {
	if a >= 1 {
		return pred, pred, true
	}
	m := len(vp)
	lo, up = math.Inf(-1), math.Inf(1)
	if k := interval.UpperRank(a, m); k >= 1 && k <= m {
		up = vp[k-1]
	}
	if k := interval.LowerRank(a, m); k >= 1 && k <= m {
		lo = vm[k-1]
	}
	if lo > up {
		return pred, pred, true
	}
	return lo, up, false
}

// jackknifeWidest is the widest finite member of the jackknife+ family of
// the sorted sets vm and vp: the smallest finite value of V- and the
// largest finite value of V+ (infinite when there is none). AgACI
// aggregates an expert's unbounded limit at it.
func jackknifeWidest(vm, vp []float64) (lo, up float64) {
	lo, up = math.Inf(-1), math.Inf(1)
	for _, v := range vm {
		if !math.IsInf(v, 0) {
			lo = v
			break
		}
	}
	for k := len(vp) - 1; k >= 0; k-- {
		if !math.IsInf(vp[k], 0) {
			up = vp[k]
			break
		}
	}
	return lo, up
}
