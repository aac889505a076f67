package audit

import (
	"context"
	"time"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// Run audits a trained model: from the training data it estimates every
// leave-one-block-out model by influence, collects the leave-one-block-out
// residuals, and gives every forecast of the test sequences a jackknife+
// interval (DESIGN sections 3 to 6). Without test data (test nil) it
// audits the training set itself, leaving one sequence out. The model is
// not modified.
func Run(ctx context.Context, model *graph.Graph, train, test *blocks.Dataset, opt *Options) (res *Result, err error) {
	defer func() {
		if err != nil {
			res = nil
		}
	}()
	defer catchInternal(&err)
	o, g, err := validate(model, train, test, opt)
	if err != nil {
		return nil, err
	}
	clock := &phaseClock{opt: &o}

	clock.begin("prepare")
	p, err := prepare(o, g, train, test)
	if err != nil {
		return nil, err
	}
	ev, err := evaluate(p)
	if err != nil {
		return nil, err
	}
	res = &Result{SelfAudit: p.self}
	res.Model, res.Setting = p.describe()

	name, _ := p.solverName()
	s, err := solverFor(name)
	if err != nil {
		return nil, err
	}
	if o.Retrain != 0 && !s.retrains() {
		return nil, errNoRetrain()
	}
	inf, err := s.influence(ctx, p, ev, clock.begin)
	if err != nil {
		return nil, err
	}
	loo, err := inf.rep.residuals(ctx, p, clock.begin)
	if err != nil {
		return nil, err
	}
	res.Setting.Estimator, res.Setting.Damping = string(inf.estimator), inf.damping
	res.Setting.Notes = append(res.Setting.Notes, inf.notes...)
	res.Diag = inf.diag
	warns := inf.warnings
	naive, err := inSampleResiduals(p)
	if err != nil {
		return nil, err
	}
	res.Diag.Influential = mostInfluential(p.scheme, res.Diag.InfluenceNorms, loo.shift)

	clock.begin("intervals")
	l, curve, err := inf.rep.limits(ctx, p, ev, false)
	if err != nil {
		return nil, err
	}
	naiveLimits(o.Alpha, naive, ev.test, &l)
	res.Summary = summarize(p.level(), p.io.K, ev.test, l)
	if res.Summary != nil {
		res.Calibration = curve
		warns = append(warns, stepCoverageWarnings(res.Summary, naive, p.self)...)
	}
	var conf []*StepConformal
	if p.cal != nil {
		cl, _, err := inf.rep.limits(ctx, p, ev, true)
		if err != nil {
			return nil, err
		}
		res.Conformal, conf = conformal(p, ev, cl, l, res.Summary != nil)
	}
	res.Sequences = sequences(p.eval, ev.test, l, conf)
	warns = append(warns, widthWarnings(res.Summary, res.Conformal)...)

	if o.Retrain != 0 {
		clock.begin("exact re-training")
		rr, w, err := retrain(ctx, p, ev, inf, loo)
		if err != nil {
			return nil, err
		}
		res.Retrain = rr
		warns = append(warns, w...)
	}
	res.Diag.Warnings = warns
	res.Diag.Phases = clock.end()
	if err := ctx.Err(); err != nil {
		// Some parallel loops stop early without an error of their own.
		return nil, err
	}
	return res, nil
}

// phaseClock records the wall time of an audit's phases and announces
// each to Options.Progress as it begins.
type phaseClock struct {
	opt    *Options
	phases []Phase
	start  time.Time
}

// begin ends the current phase, if any, and starts the phase name.
func (c *phaseClock) begin(name string) {
	now := time.Now()
	if len(c.phases) > 0 {
		c.phases[len(c.phases)-1].Seconds = now.Sub(c.start).Seconds()
	}
	c.phases = append(c.phases, Phase{Name: name})
	c.start = now
	c.opt.progress(name, 0, 0)
}

// end ends the current phase and returns the phases.
func (c *phaseClock) end() []Phase {
	if len(c.phases) > 0 {
		c.phases[len(c.phases)-1].Seconds = time.Since(c.start).Seconds()
	}
	c.opt.progress("", 0, 0)
	return c.phases
}
