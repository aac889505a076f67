package audit

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// Run audits a trained model: from the training data it estimates every
// leave-one-block-out model by influence, collects the leave-one-block-out
// residuals, and gives every forecast of the test sequences a jackknife+
// interval (docs/design.md, sections 3 to 5 and 8). Without test data (test
// nil) it audits the training set itself, leaving one sequence out. The model
// is not modified.
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
	ev, err := evaluate(ctx, p)
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
	if err := assess(ctx, p, ev, res, f.inf); err != nil {
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
	cpu    float64 // processCPU at start
}

// begin ends the current phase, if any, and starts the phase name,
// unless name is the current phase.
func (c *phaseClock) begin(name string) {
	if len(c.phases) > 0 && c.phases[len(c.phases)-1].Name == name {
		return // the phase goes on (fit and predict both compute limits)
	}
	now, cpu := time.Now(), processCPU()
	if len(c.phases) > 0 {
		c.phases[len(c.phases)-1].Seconds = now.Sub(c.start).Seconds()
		c.phases[len(c.phases)-1].CPUSeconds = cpu - c.cpu
	}
	c.phases = append(c.phases, Phase{Name: name})
	c.start, c.cpu = now, cpu
	c.opt.progress(name, 0, 0)
}

// end ends the current phase and returns the phases.
func (c *phaseClock) end() []Phase {
	if len(c.phases) > 0 {
		c.phases[len(c.phases)-1].Seconds = time.Since(c.start).Seconds()
		c.phases[len(c.phases)-1].CPUSeconds = processCPU() - c.cpu
	}
	c.opt.progress("", 0, 0)
	return c.phases
}

// Fitted is the part of an audit that depends only on the trained model,
// its training data and the calibration set: the estimated
// leave-one-block-out models, their residuals by forecast, the in-sample
// residuals and the calibration set's jackknife+ limits. Fit computes it
// once; Predict gives the forecasts of any number of new sequences their
// intervals from it without recomputing curvature or block gradients.
// Run is Fit followed by Predict on the test data.
type Fitted struct {
	opt   Options      // after defaults
	g     *graph.Graph // the model, restricted to Options.Params
	io    *modelio.IO
	theta []float64
	// train describes the training data: its file, feature and target
	// columns and shift (the sequences themselves only in process).
	train *blocks.Dataset
	// model and setting describe the fit; setting lacks what the
	// evaluated set adds (describeEval) and what the influence phase
	// decided (inf).
	model       ModelInfo
	setting     Setting
	inf         *influence
	loo         *looResiduals
	naive       map[forecast][]float64
	influential []InfluenceEntry
	cal         *calFit
	// calData is the calibration set in process (nil after Load), which
	// Predict checks the test data against.
	calData *blocks.Dataset
	// Phases are the fit's phases and their wall times.
	Phases []Phase
}

// calFit is the calibration set as a fit keeps it: its file, its number
// of sequences, its points (forecast, prediction, target) and their
// jackknife+ limits, from which calibrate computes the calibration scores.
type calFit struct {
	file   string
	seqs   int
	points []point
	lim    limits
}

// Fit is the part of Run that does not depend on the test data: from the
// training data (and Options.Calibration) it estimates every
// leave-one-block-out model by influence and collects what intervals for
// new sequences need. Exact re-training (Options.Retrain) compares
// intervals on the test points and is only available through Run.
func Fit(ctx context.Context, model *graph.Graph, train *blocks.Dataset, opt *Options) (f *Fitted, err error) {
	defer func() {
		if err != nil {
			f = nil
		}
	}()
	defer catchInternal(&err)
	// The calibration set is checked against the training data here and
	// against the test data by Predict.
	var noCal Options
	if opt != nil {
		noCal = *opt
	}
	cal := noCal.Calibration
	noCal.Calibration = nil
	o, g, err := validate(model, train, nil, &noCal)
	if err != nil {
		return nil, err
	}
	if cal != nil {
		if err := checkCalibrationTrain(train, cal); err != nil {
			return nil, err
		}
		o.Calibration = cal
	}
	if o.Retrain != 0 {
		return nil, errors.New("audit: exact re-training compares intervals on the test data: run a full audit to re-train")
	}
	clock := &phaseClock{opt: &o}
	clock.begin("prepare")
	p, err := prepare(o, g, train, nil)
	if err != nil {
		return nil, err
	}
	ev := &evaluation{}
	if p.cal != nil {
		if ev.cal, err = p.pointsOf(ctx, p.cal, p.calGroups); err != nil {
			return nil, err
		}
		p.keepTrainingStates()
	}
	f, err = fit(ctx, p, ev, clock.begin)
	if err != nil {
		return nil, err
	}
	f.Phases = clock.end()
	return f, nil
}

// fit runs the phases of an audit that depend only on the training and
// calibration data: the influence phase, the leave-one-block-out and
// in-sample residuals and the calibration points' jackknife+ limits.
// ev.cal are the calibration points; the LowRank solver's influence phase
// also maps ev.test. mark is called as phases begin.
func fit(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*Fitted, error) {
	name, _ := p.solverName()
	s, err := solverFor(name)
	if err != nil {
		return nil, err
	}
	if p.opt.Retrain != 0 && !s.retrains() {
		return nil, errNoRetrain()
	}
	inf, err := s.influence(ctx, p, ev, mark)
	if err != nil {
		return nil, err
	}
	loo, err := inf.rep.residuals(ctx, p, mark)
	if err != nil {
		return nil, err
	}
	// The in-sample residuals and the scheme advice read the model's
	// outputs on the training batches, computed once.
	fx := inf.fx
	inf.fx = nil
	if fx == nil {
		if fx, err = p.trainOutputs(ctx); err != nil {
			return nil, err
		}
	}
	naive := inSampleResiduals(p, fx)
	total := inf.total
	inf.total = nil
	if inf.diag.Fit, err = fitCheck(ctx, p, total, fx); err != nil {
		return nil, err
	}
	if inf.diag.Scheme, err = adviseScheme(ctx, p, fx); err != nil {
		return nil, err
	}
	if p.pool != nil {
		p.pool.release() // the limits phase runs programs of its own
	}
	f := &Fitted{opt: p.opt, g: p.g, io: p.io, theta: p.theta, train: p.train, inf: inf, loo: loo, naive: naive,
		influential: mostInfluential(p.scheme, inf.diag.InfluenceNorms, loo.shift)}
	f.model, f.setting = p.describeFit()
	if p.cal != nil {
		mark("intervals")
		cl, _, err := inf.rep.limits(ctx, p, ev, true)
		if err != nil {
			return nil, err
		}
		f.cal = &calFit{file: p.cal.File, seqs: p.cal.Len(), points: ev.cal, lim: cl}
		f.calData = p.cal
	}
	return f, nil
}

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
		if err := overlap(f.calData, test, false); err != nil {
			return nil, err
		}
	}
	if !f.opt.Restart && f.train.Len() > 0 {
		test = blocks.ContinueOrSelf(f.train, test)
	}
	p := &problem{opt: f.opt, g: f.g, io: f.io, theta: f.theta, train: f.train, eval: test, workers: f.opt.Workers}
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
	clock := &phaseClock{opt: &p.opt}
	clock.begin("prepare")
	ev, err := evaluate(ctx, p)
	if err != nil {
		return nil, err
	}
	rep, err := pointsRep(ctx, p, f.inf.rep, ev)
	if err != nil {
		return nil, err
	}
	if res, err = f.predict(ctx, p, ev, rep, clock.begin); err != nil {
		return nil, err
	}
	judgePredicted(res)
	res.Diag.Phases = clock.end()
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
	if p.opt.Adaptive != nil {
		res.Adaptive = adaptiveResult(p, f.cal, ev.test, l, conf, res.Sequences, sets, setsNote)
	}
	res.Diag.Warnings = append(warns, widthWarnings(res.Summary, res.Conformal)...)
	return res, nil
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
