package audit

import (
	"context"
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// dampingFor is the relative damping rho of an audit: Options.Damping
// when given, else the default for the curvature and the model's
// stationarity ratio (hvp.DefaultDampingFor: one continuous rule, which
// the ridge the user passes does not move).
func dampingFor(o *Options, stationarity float64) float64 {
	if o.Damping != 0 {
		return o.Damping
	}
	return hvp.DefaultDampingFor(o.Curvature, stationarity)
}

// DampingSensitivity is how much the intervals move when the damping is
// multiplied and divided by 10 (SensitivityFactor): the damping is a
// setting that nothing in the data pins down, so intervals that depend
// on it strongly are less trustworthy than their coverage says. The
// figures are from the same audit re-run with rho x 10 and rho / 10 (the
// block gradients, the solve, the residuals and the limits); the
// low-rank, CG and LiSSA paths do not compute it (Computed false, Reason
// says why).
type DampingSensitivity struct {
	Computed bool
	Reason   string // why not computed
	// Rho is the damping of the audit; Low and High are the summaries at
	// Rho / SensitivityFactor and Rho * SensitivityFactor: mean width
	// (over finite intervals), coverage and unbounded intervals.
	Rho       float64
	Low, High DampedFigures
	// Width is the audit's own mean width, for the shares.
	Width float64
}

// DampedFigures are the pooled figures of one re-run at another damping.
type DampedFigures struct {
	Rho        float64
	MeanLength float64
	Coverage   float64
	Infinite   int
}

// sensitivityMaxDim bounds the size of the factorisation (P for the exact
// solver, the loss terms for the dual one) for which the sensitivity is
// computed: two more factorisations of that size, a few seconds at 2000.
const sensitivityMaxDim = 2000

// WidthShare is the largest relative move of the mean width, |w' - w| /
// w, over the two re-runs (NaN when not computed).
func (d *DampingSensitivity) WidthShare() float64 {
	if !d.Computed || !(d.Width > 0) {
		return math.NaN()
	}
	return math.Max(math.Abs(d.Low.MeanLength-d.Width), math.Abs(d.High.MeanLength-d.Width)) / d.Width
}

// dampingSensitivity re-runs the influence, residual and interval phases
// with the damping rho (the audit's) multiplied and divided by
// SensitivityFactor, over the labelled points within the training steps
// (as the pooled summary counts them). The influence phase re-damps the
// audit's own (inf.redamp: its block gradients and factorisation, so
// only the solves and the Newton correction are redone) when it can, and
// runs afresh otherwise; the figures are the same either way.
func dampingSensitivity(ctx context.Context, p *problem, ev *evaluation, inf *influence, rho float64, width float64) (*DampingSensitivity, error) {
	ds := &DampingSensitivity{Rho: rho, Width: width}
	solver, _ := p.solverName()
	switch {
	case solver == Exact && p.g.NumParams() <= sensitivityMaxDim, solver == Dual && p.terms() <= sensitivityMaxDim:
	case solver == Exact || solver == Dual:
		ds.Reason = fmt.Sprintf("not computed: the %s factorisation is larger than %d, and two more would take long", solver, sensitivityMaxDim)
		return ds, nil
	default:
		ds.Reason = fmt.Sprintf("not computed on the %s path", solver)
		return ds, nil
	}
	if !(rho > 0) {
		ds.Reason = "not computed: no damping"
		return ds, nil
	}
	fx, err := p.trainOutputs(ctx)
	if err != nil {
		return nil, err
	}
	naive := inSampleResiduals(p, fx)
	s, err := solverFor(solver)
	if err != nil {
		return nil, err
	}
	quiet := func(string) {}
	for i, r := range []float64{rho / SensitivityFactor, rho * SensitivityFactor} {
		q := *p
		q.opt.Damping = r
		q.opt.Progress = nil
		var re *influence
		if inf != nil && inf.redamp != nil {
			re, err = inf.redamp(ctx, &q, r)
		} else {
			re, err = s.influence(ctx, &q, ev, quiet)
		}
		if err != nil {
			return nil, err
		}
		if _, err := re.rep.residuals(ctx, &q, quiet); err != nil {
			return nil, err
		}
		l, _, err := re.rep.limits(ctx, &q, ev, false)
		if err != nil {
			return nil, err
		}
		naiveLimits(q.opt.Alpha, naive, q.opt.poolKey(), ev.test, &l)
		pooled, _ := withinTraining(ev.test, l)
		sum := summarize(q.level(), q.io.Horizons(), pooled, l)
		if sum == nil {
			ds.Reason = "not computed: no labelled values"
			return ds, nil
		}
		f := DampedFigures{Rho: r, MeanLength: sum.MeanLength, Coverage: sum.Coverage, Infinite: sum.Infinite}
		if i == 0 {
			ds.Low = f
		} else {
			ds.High = f
		}
	}
	ds.Computed = true
	return ds, nil
}
