package audit

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// Predict gives every forecast of the sequences of test (labels
// optional) its intervals of every kind from the fit, as Run would with
// test as its test data; with labels it measures coverage as Run does.
// Predict does not modify f: any number of goroutines may call it at
// once on one Fitted (audit serve does), each call with its own test.
func (f *Fitted) Predict(ctx context.Context, test *blocks.Dataset) (res *Result, err error) {
	defer func() {
		if err != nil {
			res = nil
		}
	}()
	defer catchInternal(&err)
	if test == nil || test.Len() == 0 {
		return nil, errors.New("audit: no sequences to predict")
	}
	if err := blocks.CheckCompatible(f.train, test); err != nil {
		return nil, err
	}
	if f.calData != nil {
		if err := datacheck.Overlap(f.calData, test, false); err != nil {
			return nil, err
		}
	}
	if f.opt.Window > 0 {
		// A loaded fit has no training series to continue; in process,
		// a calibration stretch of the series continues it.
		if w := f.train.Windows; w != nil && !f.opt.Restart {
			_, test = blocks.ContinueThrough(w.Series, f.calData.WindowSeries(), test)
		}
		if test, err = blocks.CutWindows(test, f.opt.Window, f.io.Horizons()); err != nil {
			return nil, err
		}
	} else if !f.opt.Restart && f.train.Len() > 0 {
		test = blocks.ContinueOrSelf(f.train, test)
	}
	p := &problem{opt: f.opt, g: f.g, io: f.io, theta: f.theta, train: f.train, eval: test, workers: f.opt.Workers}
	p.multi, _ = f.opt.Classify.Multi(f.io.Classes()) // checked by the fit
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	if n, ok := modelio.FeatureCount(f.g, f.opt.Inputs); ok {
		if err := test.CheckFeatures(n); err != nil {
			return nil, err
		}
	}
	if err := p.io.CheckLengths(test); err != nil {
		return nil, err
	}
	if p.evalGroups, err = p.makeGroups(test, wholeBatch); err != nil {
		return nil, err
	}
	clock := p.opt.clock()
	clock.Begin("prepare")
	ev, err := evaluate(ctx, p)
	if err != nil {
		return nil, err
	}
	rep, err := pointsRep(ctx, p, f.inf.rep, ev)
	if err != nil {
		return nil, err
	}
	if res, err = f.predict(ctx, p, ev, rep, clock.Begin); err != nil {
		return nil, err
	}
	judgePredicted(res)
	res.Diag.Phases = clock.End()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// predict runs the phases of an audit that depend on the evaluated
// points ev.test of p: their jackknife+, in-sample and calibrated limits,
// the summary and the warnings on them. p is the fit's problem (Run) or
// one for new data (Predict); rep is the fit's influence representation
// for the points of ev (pointsRep).
func (f *Fitted) predict(ctx context.Context, p *problem, ev *evaluation, rep influenceRep, mark func(string)) (*Result, error) {
	res := &Result{SelfAudit: p.self, Model: f.model, Setting: f.setting}
	res.Setting.Notes = slices.Clone(f.setting.Notes)
	describeEval(&res.Setting, p.eval, p.self)
	res.Setting.Estimator, res.Setting.Damping = string(f.inf.estimator), f.inf.damping
	res.Setting.Notes = append(res.Setting.Notes, f.inf.notes...)
	res.Diag = f.inf.diag
	res.Diag.Influential = f.influential
	warns := slices.Clone(f.inf.warnings)

	mark("intervals")
	l, curve, sets, setsNote, err := testLimits(ctx, p, rep, ev)
	if err != nil {
		return nil, err
	}
	if f.cal == nil {
		if err := datacheck.NoResiduals(p.train, p.eval, l.m, func(i int) int { return ev.test[i].f.T + ev.test[i].f.H }, p.io.ForecastRows); err != nil {
			return nil, err
		}
	}
	if n := datacheck.TargetAsInput(p.train, p.io.ForecastRows); n > 0 {
		warns = append(warns, Warning{Code: TargetAsInput, Step: -1, Count: n})
	}
	pooled, beyond := withinTraining(ev.test, l)
	naiveLimits(p.opt.Alpha, f.naive, p.opt.poolKey(), ev.test, &l)
	if res.Summary = summarize(p.level(), p.io.Horizons(), pooled, l); res.Summary != nil {
		if res.Summary.Beyond = beyond; beyond != nil {
			beyond.TrainRows = p.train.MaxLen()
		}
	}
	if res.Summary != nil {
		res.Calibration = curve
		warns = append(warns, stepCoverageWarnings(res.Summary, f.naive, p.self)...)
		res.Summary.OverTime = overTime(p.eval, pooled, l, p.opt.Alpha, p.opt.timeLag())
		warns = append(warns, timeWarnings(res.Summary.OverTime)...)
	}
	var conf []*interval.StepConformal
	if f.cal != nil {
		res.Conformal, conf = conformal(p, f.cal, ev.test, l, res.Summary != nil)
	}
	res.Sequences = sequences(p.eval, ev.test, l, conf)
	res.Classification = classified(p.opt, res.Sequences)
	if p.opt.Adaptive != nil {
		res.Adaptive = adaptiveResult(p, f.cal, ev.test, l, conf, res.Sequences, sets, setsNote)
	}
	res.Diag.Warnings = append(warns, widthWarnings(res.Summary, res.Conformal)...)
	return res, nil
}

// classified is the summary of a classifier's forecasts seqs (nil
// without Options.Classify).
func classified(o Options, seqs []SequenceResult) *classify.Summary {
	if o.Classify == nil {
		return nil
	}
	var fs []classify.Forecast
	for _, s := range seqs {
		for _, st := range s.Steps {
			if st.Class != nil {
				f := *st.Class
				f.Row = st.Row
				fs = append(fs, f)
			}
		}
	}
	return classify.Summarize(fs, o.Alpha, o.Classify.Score, o.Classify.FlagAbove, o.Classify.FlagBelow)
}

// widthWarnings warns when the jackknife+ intervals (summary s) are more
// than WideBound times wider than the in-sample residual intervals, or
// than split conformal on a calibration set (c, nil without one;
// docs/design.md, section 10.2): coverage alone would call such intervals
// good.
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
			if k.Kind == interval.KindSplit && k.MeanLength > 0 && s.MeanLength > WideBound*k.MeanLength {
				out = append(out, Warning{Code: WiderThanCalibrated, Step: -1, Figure: s.MeanLength / k.MeanLength, Bound: WideBound, Ratio: k.MeanLength})
			}
		}
	}
	return out
}

// stepCoverageWarnings warns about the steps whose coverage in s falls
// below the 1 - 2 alpha the jackknife+ guarantees by more than sampling
// error (interval.ShortSteps, steps with at least minStepValues values),
// and gives the ratio of the model's test to training errors at those
// steps (the in-sample residuals naive; not in a self-audit), from which
// the judgement tells a model that fits training noise there (OverfitRatio),
// which leave-one-out models started from the trained model keep in part.
func stepCoverageWarnings(s *Summary, naive map[forecast][]float64, self bool) []Warning {
	floor := 1 - 2*s.Alpha
	low := interval.ShortSteps(s.CoveragePerStep, s.PointsPerStep, floor, minStepValues)
	if len(low) == 0 {
		return nil
	}
	// In-sample residual RMS per row, summed in the order of the
	// forecasts: over a map's order the sums of a row's horizons would
	// round differently from run to run.
	ss := make([]float64, len(s.CoveragePerStep))
	cnt := make([]float64, len(ss))
	for _, f := range sortedForecasts(naive) {
		if res := naive[f]; f.T < len(ss) {
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

// pointsRep is the influence representation rep of a fit made ready
// for the evaluation points ev of the problem p of Predict: the steps of
// the dense solvers need nothing more; the LowRank solver's table needs
// the points' records in its basis (their output-Jacobian rows mapped by
// table.MapPoints, as its influence phase maps the test points of Run). rep is
// not modified, so that Predict may run concurrently.
func pointsRep(ctx context.Context, p *problem, rep influenceRep, ev *evaluation) (influenceRep, error) {
	r, ok := rep.(*tableRep)
	if !ok {
		return rep, nil
	}
	if r.basis == nil {
		return nil, errors.New("audit: the low-rank fit keeps no basis to map new points with")
	}
	lr := &lowRankPass{p: p, basis: r.basis, slots: r.slots}
	test, _, err := lr.testRecords(ctx, &evaluation{test: ev.test})
	if err != nil {
		return nil, err
	}
	out := *r
	out.test, out.cal = test, nil
	return &out, nil
}
