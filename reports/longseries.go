package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// tooFewResiduals says why intervals are unbounded for lack of
// leave-one-out residuals: the rule (interval.MinResiduals), the fewest
// residuals an unbounded interval had, and the remedies.
func tooFewResiduals(r *audit.Result) string {
	alpha := r.Setting.Alpha
	if s := r.Summary; s != nil && s.Alpha > 0 {
		alpha = s.Alpha
	}
	need := interval.MinResiduals(alpha)
	fewest := -1
	for _, q := range r.Sequences {
		for _, st := range q.Steps {
			if st.Target != nil && (!isFinite(st.Lower) || !isFinite(st.Upper)) && (fewest < 0 || st.M < fewest) {
				fewest = st.M
			}
		}
	}
	had := ""
	if fewest >= 0 && fewest < need {
		had = fmt.Sprintf("; the fewest here had %d", fewest)
	}
	remedy := "pool them across rows (--blocks interval --block-length K, which pools when the training sequences are few, or --pool rows)"
	if r.Setting.Pooling == string(audit.PoolRows) {
		remedy = fmt.Sprintf("start the test rows after the %d warm-up rows (--pool-warmup, or test rows that continue a training sequence)", r.Setting.Warmup)
	}
	return fmt.Sprintf("too few leave-one-out residuals for this alpha (a forecast needs at least %d at alpha %g, ⌈1/α⌉ − 1%s): %s, add training sequences, raise --alpha, or add a calibration set (--calibration).",
		need, alpha, had, remedy)
}

// timeView is the section "Coverage over time" of the HTML and Markdown
// reports: a lead sentence, the rolling-coverage chart and the table of
// coverage per sequence.
type timeView struct {
	chart  *chart // the rolling-coverage chart, or nil
	Lead   string
	Charts []chartView
	Head   []string
	Rows   [][]string
}

// overTimeLead says how coverage is judged along time: the rolling
// window, the effective sample size and tolerance, the early and late
// periods and the errors' serial correlation.
func overTimeLead(r *audit.Result) string {
	o := r.Summary.OverTime
	out := fmt.Sprintf("Rolling coverage is the share of the last %d forecasts inside their interval (pooled: of every sequence's forecasts at the last %d steps). Values of one series are serially dependent: with Newey-West weights up to lag %d their coverage indicators count as %s independent values of %s, and the sampling tolerance is ±%.1f points",
		o.Window, o.Window, o.Lag, num(o.EffectivePoints), count(r.Summary.Points), 100*o.Tolerance)
	out += " (the verdict uses it)."
	if !math.IsNaN(o.Early) {
		out += fmt.Sprintf(" Coverage in the first third of the test steps %s, in the last third %s (tolerance of the difference ±%.1f points).", pct(o.Early), pct(o.Late), 100*o.DriftTolerance)
	}
	if o.AutocorrPairs > 0 {
		out += fmt.Sprintf(" The errors' lag-1 autocorrelation within sequences is %.2f (independent errors: within ±%.2f).", o.Autocorrelation, 2/math.Sqrt(float64(o.AutocorrPairs)))
	}
	if !math.IsNaN(o.Worst) {
		out += fmt.Sprintf(" The worst pooled window covers %s.", pct(o.Worst))
	}
	return out
}

// newTimeView is the section of r's coverage over time; nil without it,
// and for short sequences (not OverTime.Long), where coverage per step
// already shows it.
func newTimeView(r *audit.Result) *timeView {
	if r.Summary == nil || r.Summary.OverTime == nil || !r.Summary.OverTime.Long {
		return nil
	}
	o := r.Summary.OverTime
	v := &timeView{Lead: overTimeLead(r)}
	if v.chart = rollingChart(r); v.chart != nil {
		v.Charts = views([]chart{*v.chart})
	}
	if len(o.Sequences) > 0 {
		v.Head = []string{"Sequence", "Values", "Coverage", fmt.Sprintf("Worst window of %d", o.Window), "Tolerance", "Under-covers"}
		for _, s := range o.Sequences {
			under := "no"
			if s.Under {
				under = fmt.Sprintf("yes: below %s by more than its tolerance", pct0(1-r.Summary.Alpha))
			}
			if s.Drift {
				under += fmt.Sprintf("; coverage drifts from %s in its first third to %s in its last: its test period is not exchangeable with the training period", pct(s.Early), pct(s.Late))
			}
			v.Rows = append(v.Rows, []string{s.ID, count(s.Points), pct(s.Coverage), pct(s.Worst), fmt.Sprintf("±%.1f", 100*s.Tolerance), under})
		}
	}
	return v
}

// rollingChart: pooled rolling coverage along time, and per sequence for
// up to six sequences, against the 1-alpha and 1-2alpha lines; nil when
// no window is complete.
func rollingChart(r *audit.Result) *chart {
	s := r.Summary
	o := s.OverTime
	if len(o.Pooled) == 0 {
		return nil
	}
	nominal, floor := 1-s.Alpha, 1-2*s.Alpha
	p := newPlot("step (time)", "rolling coverage")
	p.Y.Tick.Marker = niceTicks(percent)
	x0, x1 := o.Pooled[0].Step, o.Pooled[len(o.Pooled)-1].Step
	lo := math.Min(floor, o.Worst)
	palette := []color.Color{colLow, colHigh, colNaive, colPred, colFloor, colGoal}
	shown := 0
	for _, q := range o.Sequences {
		if shown == len(palette) || len(q.Rolling) == 0 {
			continue
		}
		lo = math.Min(lo, q.Worst)
		x0, x1 = math.Min(x0, q.Rolling[0].Step), math.Max(x1, q.Rolling[len(q.Rolling)-1].Step)
		line(p, rollingXY(q.Rolling), palette[shown], 1, nil, false, q.ID)
		shown++
	}
	p.Y.Min, p.Y.Max = math.Max(0, math.Floor((lo-0.05)*20)/20), 1.0
	hline(p, nominal, x0, x1, colGoal, dashed, fmt.Sprintf("target %s", pct0(nominal)))
	hline(p, floor, x0, x1, colFloor, dotted, fmt.Sprintf("guarantee %s", pct0(floor)))
	line(p, rollingXY(o.Pooled), colJack, 2, nil, false, "pooled")
	return &chart{
		ID:    "rolling-coverage",
		Title: "Coverage over time",
		Caption: fmt.Sprintf("Share of the last %d forecasts inside their jackknife+ interval, at the step that ends each window: pooled over every sequence (blue, windows of %d steps) and per sequence. A curve that falls below the dotted red line (%s) for long stretches means the data drift away from what the training period showed.",
			o.Window, o.Window, pct0(floor)),
		SVG: render(p, chartW, chartH),
	}
}

// rollingXY are a rolling coverage's points.
func rollingXY(ps []adaptive.RollingPoint) plotter.XYs {
	out := make(plotter.XYs, len(ps))
	for i, q := range ps {
		out[i] = plotter.XY{X: q.Step, Y: q.Coverage}
	}
	return out
}

// writeTimeMarkdown writes the section "Coverage over time".
func writeTimeMarkdown(md *mdWriter, r *audit.Result, figure func(chart)) {
	v := newTimeView(r)
	if v == nil {
		return
	}
	fmt.Fprintf(md.b, "## Coverage over time\n\n%s\n\n", mdEscape(v.Lead))
	if v.chart != nil {
		figure(*v.chart)
	}
	if len(v.Rows) > 0 {
		md.table(v.Head, "lrrrrl", v.Rows)
	}
}

// timeWarningText puts the over-time warnings into words, with what they
// mean for each kind of interval's guarantee.
func timeWarningText(r *audit.Result, w audit.Warning) string {
	kinds := "The jackknife+ guarantee (and split conformal's, with --calibration) assumes test values exchangeable with the training (or calibration) values; it does not hold along a series that drifts, and coverage then holds at best on average over the test period. Intervals that adapt along time (adaptive conformal inference) target the long-run coverage of any sequence; recalibrating on the most recent stretch also helps"
	switch w.Code {
	case audit.CoverageDrift:
		dir := "falls"
		if w.Figure > w.Bound {
			dir = "rises"
		}
		return fmt.Sprintf("Coverage drifts along time: it %s from %s in the first third of the test steps to %s in the last third (%d values; the difference is beyond its sampling tolerance of ±%.1f points, which allows for serial dependence). The test data are not exchangeable with the training data. %s", dir, pct(w.Bound), pct(w.Figure), w.Count, 100*w.Ratio, kinds)
	case audit.SerialCorrelation:
		return fmt.Sprintf("The errors are serially correlated: their lag-1 autocorrelation within sequences is %.2f over %d pairs (independent errors stay within ±%.2f), so neighbouring values are not independent draws and coverage rests on fewer effective values than it counts (the verdict's tolerance allows for it). %s", w.Figure, w.Count, w.Bound, kinds)
	}
	return ""
}

// jsonOverTime is adaptive.OverTime in the JSON.
type jsonOverTime struct {
	Window          int               `json:"window"`
	Lag             int               `json:"lag"`
	Long            bool              `json:"long_series"`
	Inflation       fnum              `json:"inflation"`
	EffectivePoints fnum              `json:"effective_points"`
	Tolerance       fnum              `json:"tolerance"`
	Worst           fnum              `json:"worst_window"`
	Pooled          []jsonRolling     `json:"pooled"`
	Early           fnum              `json:"early_coverage"`
	Late            fnum              `json:"late_coverage"`
	EarlyPoints     int               `json:"early_points"`
	LatePoints      int               `json:"late_points"`
	DriftTolerance  fnum              `json:"drift_tolerance"`
	Autocorrelation fnum              `json:"autocorrelation"`
	AutocorrPairs   int               `json:"autocorrelation_pairs"`
	Sequences       []jsonSeqCoverage `json:"sequences,omitempty"`
}

type jsonRolling struct {
	Step     fnum `json:"t"`
	Coverage fnum `json:"coverage"`
}

type jsonSeqCoverage struct {
	ID        string        `json:"id"`
	Points    int           `json:"points"`
	Coverage  fnum          `json:"coverage"`
	Worst     fnum          `json:"worst_window"`
	Tolerance fnum          `json:"tolerance"`
	Under     bool          `json:"under_covers"`
	Early     fnum          `json:"early_coverage"`
	Late      fnum          `json:"late_coverage"`
	Drift     bool          `json:"drift"`
	Rolling   []jsonRolling `json:"rolling"`
}

func jsonRollingOf(ps []adaptive.RollingPoint) []jsonRolling {
	out := make([]jsonRolling, len(ps))
	for i, p := range ps {
		out[i] = jsonRolling{Step: fnum(p.Step), Coverage: fnum(p.Coverage)}
	}
	return out
}

func jsonOverTimeOf(o *adaptive.OverTime) *jsonOverTime {
	if o == nil {
		return nil
	}
	j := &jsonOverTime{Window: o.Window, Lag: o.Lag, Long: o.Long, Inflation: fnum(o.Inflation), EffectivePoints: fnum(o.EffectivePoints),
		Tolerance: fnum(o.Tolerance), Worst: fnum(o.Worst), Pooled: jsonRollingOf(o.Pooled),
		Early: fnum(o.Early), Late: fnum(o.Late), EarlyPoints: o.EarlyPoints, LatePoints: o.LatePoints,
		DriftTolerance: fnum(o.DriftTolerance), Autocorrelation: fnum(o.Autocorrelation), AutocorrPairs: o.AutocorrPairs}
	for _, s := range o.Sequences {
		j.Sequences = append(j.Sequences, jsonSeqCoverage{ID: s.ID, Points: s.Points, Coverage: fnum(s.Coverage), Worst: fnum(s.Worst),
			Tolerance: fnum(s.Tolerance), Under: s.Under, Early: fnum(s.Early), Late: fnum(s.Late), Drift: s.Drift, Rolling: jsonRollingOf(s.Rolling)})
	}
	return j
}

// refitStartText says where the block re-fits started and why.
func refitStartText(rt *audit.RetrainResult) string {
	switch {
	case rt.Budget != "":
		return fmt.Sprintf("re-trained with the training budget (%s) from the same start and the same shuffles, with and without the block; changes measured between the two (docs/design.md, section 4.7.1)", rt.Budget)
	case rt.Warm:
		return "warm: from the trained parameters on the leave-block-out loss minus the full gradient there, without a full re-fit (the model is not at a stationary point, or --retrain-start warm); changes measured from the trained parameters"
	case rt.Tilted:
		return fmt.Sprintf("tilted: the full re-fit did not converge (%s, gradient norm %s), so each block was re-fitted from the trained parameters with the full gradient subtracted", plural(rt.FullIterations, "iteration"), num(rt.FullGrad))
	}
	return fmt.Sprintf("after a full re-fit to a stationary point (%s); changes measured from it", plural(rt.FullIterations, "iteration"))
}
