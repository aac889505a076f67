package audit

import (
	"context"
	"math"

	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// Beyond summarises the forecasts of the evaluated sequences at steps
// that no training sequence reaches: no leave-one-out residual exists
// there, so jackknife+ cannot bound their intervals (they are unbounded
// for that reason, not for a small alpha). They are kept in
// Result.Sequences but left out of every pooled figure of Summary and
// of the verdict.
type Beyond struct {
	// FromRow is the first row (0-based) with such a forecast, and
	// TrainRows the most rows of a training sequence.
	FromRow   int
	TrainRows int
	// Forecasts counts them, Labelled those with a target.
	Forecasts int
	Labelled  int
	// Inside is true when some of them lie before a row that has
	// residuals: rows inside the training sequences that no training
	// sequence labels (empty target cells), not rows past their end.
	Inside bool
}

// withinTraining returns pts with the forecasts that have no training
// residual (limits m of 0: in a self-audit, none other than the point's
// own sequence's) marked unlabelled, so that the pooled summary leaves
// them out, and a summary of those forecasts (nil when there are none,
// or when no labelled value would be left; the caller sets TrainRows).
func withinTraining(pts []point, l limits) ([]point, *Beyond) {
	var out []point
	b := &Beyond{FromRow: math.MaxInt}
	lastBounded := -1 // the last row with residuals
	for i, pt := range pts {
		if i >= len(l.m) || l.m[i] > 0 {
			lastBounded = max(lastBounded, pt.f.T)
			continue
		}
		if out == nil {
			out = append([]point(nil), pts...)
		}
		b.Forecasts++
		b.FromRow = min(b.FromRow, pt.f.T)
		if pt.has {
			b.Labelled++
			out[i].has = false
		}
	}
	if out == nil {
		return pts, nil
	}
	b.Inside = b.FromRow < lastBounded
	for _, pt := range out {
		if pt.has {
			return out, b
		}
	}
	// No labelled value within the training steps: nothing to pool
	// apart from them, so they stay (every interval there unbounded).
	return pts, nil
}

// fitCheck is the column and ridge check of a fit (datacheck.FitCheck): the ridge
// part from the total training gradient, except on the LowRank path,
// which does not form it. total is that gradient when the influence
// phase formed it (influence.total), else nil; fx are the model's
// outputs on the training batches (trainOutputs).
func fitCheck(ctx context.Context, p *problem, total []float64, fx trainOutputs) (*datacheck.FitCheck, error) {
	if solver, _ := p.solverName(); solver != LowRank && total == nil {
		total = make([]float64, len(p.theta))
		if _, err := p.objective(p.groups).Gradient(ctx, p.theta, total); err != nil {
			return nil, err
		}
	}
	return checkFit(ctx, p, total, fx)
}

// assess is Run's last phases: the damping sensitivity (when asked for;
// inf is the audit's influence phase, which it re-damps; a phase of its
// own, so that --timings prices it), then the recommended kind of
// interval and the verdict (the phase "judgement"); mark begins a phase.
func assess(ctx context.Context, p *problem, ev *evaluation, res *Result, inf *influence, mark func(string)) error {
	if res.Summary != nil && p.opt.DampingSensitivity {
		mark("damping sensitivity")
		ds, err := dampingSensitivity(ctx, p, ev, inf, res, sensitivitySample)
		if err != nil {
			return err
		}
		if inf != nil {
			inf.redamp = nil // release the factorisation and block gradients
		}
		res.Diag.DampingSensitivity = ds
	}
	mark("judgement")
	judgePredicted(res)
	return nil
}

// judgePredicted gives a Result its recommendation and verdict. A fit
// keeps the column check (Diagnostics.Fit); the damping sensitivity
// re-runs the fit's phases, so Fitted.Predict goes without it.
func judgePredicted(res *Result) {
	if res.Conformal != nil {
		// A windowed audit's calibration values are a stretch of the
		// series before the test period (interval.StepRule.Strict).
		rule := calibrationRule
		rule.Strict = res.Setting.Blocks == blocks.Windows.String()
		res.Conformal.Recommendation = recommend(res.Conformal, res.Summary, rule)
		if rec := res.Conformal.Recommendation; rec != nil && res.Classification != nil {
			for i, k := range res.Conformal.Calibrated {
				if k.Kind == interval.KindJackknife {
					res.Classification.Recommend(k.Coverage, rec.CalHolds[i])
				}
			}
		}
	}
	res.Verdict = Judge(res)
}
