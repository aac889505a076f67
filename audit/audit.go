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
	f, err := fit(ctx, p, ev, clock.begin)
	if err != nil {
		return nil, err
	}
	if res, err = f.predict(ctx, p, ev, f.inf.rep, clock.begin); err != nil {
		return nil, err
	}
	warns := res.Diag.Warnings
	if o.Retrain != 0 {
		clock.begin("exact re-training")
		rr, w, err := retrain(ctx, p, ev, f.inf, f.loo)
		if err != nil {
			return nil, err
		}
		res.Retrain = rr
		warns = append(warns, w...)
	}
	res.Diag.Warnings = warns
	clock.begin("judgement")
	if err := assess(ctx, p, ev, res); err != nil {
		return nil, err
	}
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

// begin ends the current phase, if any, and starts the phase name,
// unless name is the current phase.
func (c *phaseClock) begin(name string) {
	if len(c.phases) > 0 && c.phases[len(c.phases)-1].Name == name {
		return // the phase goes on (fit and predict both compute limits)
	}
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
