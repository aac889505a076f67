package audit

import (
	"context"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// The jackknife+ base of ACI and AgACI (docs/design.md, section 7.2):
// the member at working level 1 - a is the jackknife+ interval
// recomputed at miscoverage a from the point's leave-one-block-out sets
// (package adaptive recomputes it); the audit gives it the sets, built
// from the same forward passes as the points' limits.

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
		vm, vp := interval.JackknifeValues(es, preds.point(i, buf), skip, nil, nil, nil)
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
	if a := p.opt.Adaptive; a == nil || a.Base != adaptive.BaseJackknife {
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
