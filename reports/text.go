package reports

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rnnaudit/rnnaudit/audit"
)

// This file holds the plain-language text and the number formats that the
// HTML and Markdown reports share. Every string here is plain text: the
// renderers escape it for their format.

// pct formats a fraction as a percentage with one decimal: 0.8934 gives
// "89.3%". NaN gives "n/a".
func pct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
}

// pct0 formats a fraction as a whole percentage where that is exact enough
// (0.9 gives "90%", 0.925 gives "92.5%").
func pct0(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	v := 100 * x
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + "%"
}

// num formats a measurement with 4 significant digits, infinities as
// "+∞"/"−∞" and NaN as "n/a".
func num(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case math.IsInf(x, 1):
		return "+∞"
	case math.IsInf(x, -1):
		return "−∞"
	case x == 0:
		return "0"
	}
	a := math.Abs(x)
	if a >= 1e-3 && a < 1e6 {
		s := strconv.FormatFloat(x, 'f', max(0, 3-int(math.Floor(math.Log10(a)))), 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	return strconv.FormatFloat(x, 'e', 3, 64)
}

// step formats a step value as written in the data (3, 2.5).
func step(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// seconds formats a duration in seconds.
func seconds(s float64) string {
	switch {
	case s < 0.01:
		return fmt.Sprintf("%.1f ms", 1000*s)
	case s < 1:
		return fmt.Sprintf("%.0f ms", 1000*s)
	case s < 60:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%dm %02.0fs", int(s)/60, math.Mod(s, 60))
}

// count formats an integer with thousands separators: 10000 gives
// "10,000".
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plural returns "1 value", "2 values".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return count(n) + " " + noun + "s"
}

// modelName is the base name of the model file, or "the model".
func modelName(r *audit.Result) string {
	if r.Model.Path == "" {
		return "the model"
	}
	return filepath.Base(r.Model.Path)
}

// evaluated says which data the metrics describe.
func evaluated(r *audit.Result) string {
	if r.SelfAudit {
		return "training"
	}
	return "test"
}

// thresholdName is "below 4" or "above 10".
func thresholdName(t *audit.Threshold, low bool) string {
	if low {
		return "below " + num(t.Threshold)
	}
	return "above " + num(t.Threshold)
}

// headline is the one-sentence answer at the top of a report, such as
// "90% intervals covered 89.3% of 10,000 test values; flagged ‘below 4’
// with 81.0% precision."
func headline(r *audit.Result) string {
	s := r.Summary
	if s == nil {
		n := 0
		for _, q := range r.Sequences {
			n += len(q.Steps)
		}
		return fmt.Sprintf("%s intervals for %s of %s; the %s data has no targets, so their coverage cannot be measured.",
			pct0(r.Setting.NominalCover), plural(n, "forecast"), plural(len(r.Sequences), "sequence"), evaluated(r))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s intervals covered %s of %s %s values", pct0(1-s.Alpha), pct(s.Coverage), count(s.Points), evaluated(r))
	for _, a := range []struct {
		t   *audit.Threshold
		low bool
	}{{s.Audit.Low, true}, {s.Audit.High, false}} {
		if a.t == nil {
			continue
		}
		if a.t.Flagged == 0 {
			fmt.Fprintf(&b, "; no value was flagged ‘%s’", thresholdName(a.t, a.low))
			continue
		}
		fmt.Fprintf(&b, "; flagged ‘%s’ with %s precision", thresholdName(a.t, a.low), pct(a.t.Precision))
	}
	b.WriteString(".")
	return b.String()
}

// Verdict levels, for the colour of the headline.
const (
	good = "good"
	fair = "fair"
	poor = "poor"
	none = "none"
)

// verdict judges the coverage against its nominal level 1-alpha and its
// guarantee 1-2alpha, allowing two binomial standard errors (at least one
// percentage point) of sampling error. It returns a level and a sentence.
func verdict(r *audit.Result) (level, text string) {
	s := r.Summary
	if s == nil {
		return none, "Give labelled test data (a target column) to measure coverage."
	}
	level, text = coverageVerdict(s)
	// Width: intervals many times wider than the model's own errors (or
	// than calibrated intervals) are not good, whatever they cover.
	for _, w := range r.Diag.Warnings {
		switch w.Code {
		case audit.TooWide, audit.WiderThanCalibrated:
			if level == good {
				level = fair
			}
			ref := "the in-sample residual intervals"
			if w.Code == audit.WiderThanCalibrated {
				ref = "the split-conformal intervals of the calibration set"
			}
			text += fmt.Sprintf(" But they are %.1f times as wide as %s (mean width %s): too wide to be informative; see the warnings.", w.Figure, ref, num(w.Ratio))
		}
	}
	// Unbounded intervals cover everything and say nothing: most of them
	// unbounded is poor, more than a few at most fair.
	if s.Points > 0 && s.Infinite > 0 {
		share := float64(s.Infinite) / float64(s.Points)
		switch {
		case share > UnboundedPoor:
			level = poor
			text += fmt.Sprintf(" But %s of the intervals are unbounded: they say nothing there; see the warnings.", pct(share))
		case share > UnboundedFair:
			if level == good {
				level = fair
			}
			text += fmt.Sprintf(" But %s of the intervals are unbounded.", pct(share))
		}
	}
	// Stationarity: a model far from a minimum of the loss it is audited
	// with, or data that do not match it, is said so here.
	if d := r.Diag.Stationarity; d > audit.MismatchBound {
		text += fmt.Sprintf(" The model is far from a stationary point of its training loss (total gradient %.3g times the typical block gradient): the data, ridge or loss may not match its training (swapped feature columns do this).", d)
	} else if d > audit.StationarityBound {
		text += fmt.Sprintf(" The model is not at a stationary point of its training loss (total gradient %.2g times the typical block gradient).", d)
	}
	return level, text
}

// UnboundedPoor and UnboundedFair are the shares of unbounded intervals
// above which the verdict is poor, or at most fair: an unbounded
// interval covers by construction, so coverage alone would call a run
// whose intervals are all infinite good (the Newton estimator with the
// Hessian on the packed LSTM of the influence benchmark did that).
const (
	UnboundedPoor = 0.5
	UnboundedFair = 0.05
)

// coverageVerdict judges the coverage alone: against its nominal level
// 1-alpha and its guarantee 1-2alpha, allowing two binomial standard
// errors (at least one percentage point) of sampling error.
func coverageVerdict(s *audit.Summary) (level, text string) {
	nominal, floor := 1-s.Alpha, 1-2*s.Alpha
	tol := audit.CoverageTolerance(nominal, s.Points)
	switch {
	case s.Coverage > nominal+tol:
		return good, fmt.Sprintf("Coverage is above the %s target: the intervals are on the safe side, perhaps wider than they need to be.", pct0(nominal))
	case s.Coverage >= nominal-tol:
		return good, fmt.Sprintf("Coverage is at the %s target (within sampling error).", pct0(nominal))
	case s.Coverage >= floor-tol:
		return fair, fmt.Sprintf("Coverage is below the %s target but not below the %s that the jackknife+ guarantees: the intervals are somewhat too narrow.", pct0(nominal), pct0(floor))
	}
	return poor, fmt.Sprintf("Coverage is below the %s that the jackknife+ guarantees: do not rely on these intervals; see the warnings and diagnostics.", pct0(floor))
}

// subline gives the other headline numbers in one sentence.
func subline(r *audit.Result) string {
	s := r.Summary
	if s == nil {
		return ""
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("Mean interval width %s (in-sample residual intervals: %s, covering %s)",
		num(s.MeanLength), num(s.Naive.MeanLength), pct(s.Naive.Coverage)))
	parts = append(parts, fmt.Sprintf("RMSE of the predictions %s", num(s.RMSE)))
	if jc := jointText(r); jc != "" {
		parts = append(parts, fmt.Sprintf("%s in %s of sequences", jc, pct(s.JointCoverage)))
	}
	out := strings.Join(parts, "; ") + "."
	if s.Infinite > 0 {
		if n := r.Diag.UnboundedBlocks; n > 0 {
			out += fmt.Sprintf(" %s unbounded: %s that the model interpolates (unbounded leave-out residuals), or too few leave-one-out residuals for this alpha.", pluralIs(s.Infinite, "interval"), plural(n, "training block"))
		} else {
			out += fmt.Sprintf(" %s unbounded: too few leave-one-out residuals for this alpha.", pluralIs(s.Infinite, "interval"))
		}
	}
	return out
}

// pluralIs returns "1 interval is", "3 intervals are".
func pluralIs(n int, noun string) string {
	if n == 1 {
		return "1 " + noun + " is"
	}
	return count(n) + " " + noun + "s are"
}

// warnings are the audit's warnings put into words, one sentence or
// paragraph each; the step-coverage warnings are joined into one.
func warnings(r *audit.Result) []string {
	var out []string
	var steps, lev []audit.Warning
	stepsAt, levAt := -1, -1
	for _, w := range r.Diag.Warnings {
		switch w.Code {
		case audit.StepCoverage:
			if len(steps) == 0 {
				stepsAt = len(out)
				out = append(out, "") // its place, filled below
			}
			steps = append(steps, w)
			continue
		case audit.HighLeverage:
			if len(lev) == 0 {
				levAt = len(out)
				out = append(out, "")
			}
			lev = append(lev, w)
			continue
		}
		out = append(out, sentence(warningText(r, w)))
	}
	if stepsAt >= 0 {
		out[stepsAt] = stepCoverageText(steps)
	}
	if levAt >= 0 {
		out[levAt] = highLeverageText(lev)
	}
	return out
}

// highLeverageText joins the high-leverage warnings into one paragraph.
func highLeverageText(ws []audit.Warning) string {
	var parts []string
	for i, w := range ws {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ws)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("step %d: %.2f", w.Step+1, w.Figure))
	}
	return fmt.Sprintf("The training sequences' own leverage is high at some steps (mean %s; above %.2g): the model fits a large part of each training value there, so intervals built from the trained model are expected to under-cover at these steps. Intervals calibrated on held-out sequences (--calibration, with sequences the model never trained on) would correct them.", strings.Join(parts, ", "), ws[0].Bound)
}

// warningText puts one warning (other than step coverage) into words: what
// was measured, against what, and what to do.
func warningText(r *audit.Result, w audit.Warning) string {
	curv := "curvature"
	switch r.Setting.Curvature {
	case "hessian":
		curv = "Hessian"
	case "gauss-newton":
		curv = "Gauss-Newton matrix"
	}
	switch w.Code {
	case audit.NotStationary:
		return fmt.Sprintf("The model is not at a stationary point of its training loss: the total gradient is %.2g times the typical block gradient. Influence estimates assume a trained (converged) model; train longer or check that the data, ridge and loss match the training", w.Figure)
	case audit.NonPositiveTrace:
		return fmt.Sprintf("The %s has a non-positive trace (%.4g): the influence (Newton) step is not a descent step; use the Gauss-Newton curvature", curv, w.Figure)
	case audit.Indefinite:
		return fmt.Sprintf("The %s has %d eigenvalue(s) below -lambda (smallest %.4g, lambda %.4g): the damped matrix is indefinite, so the influence step is not a descent step in those directions and intervals can blow up; use the Gauss-Newton curvature or more damping", curv, w.Count, w.Figure, -w.Bound)
	case audit.SolverTolerance:
		return fmt.Sprintf("Conjugate gradients did not reach tolerance %.1g on %d right-hand side(s) (worst relative residual %.2g): raise the iteration limit or the damping", w.Bound, w.Count, w.Figure)
	case audit.FullRefitMoved:
		return fmt.Sprintf("Re-training on all the data moves the parameters by %.3g, more than the typical influence of one block (%.3g): the model was not trained to convergence, so influence estimates are measured against a moving target", w.Figure, w.Bound)
	case audit.UnboundedBlocks:
		names := r.Diag.UnboundedLabels
		more := ""
		if len(names) > 5 {
			names, more = names[:5], fmt.Sprintf(" and %d more", len(r.Diag.UnboundedLabels)-5)
		}
		return fmt.Sprintf("The model almost interpolates %d training block(s) (%s%s): a leverage eigenvalue is within %g of 1 (largest %.6f), so their leave-out residuals are unbounded and the intervals they enter are infinite on that side where they reach the quantile. More training data, fewer parameters or more regularisation would help", w.Count, strings.Join(names, ", "), more, w.Bound, w.Figure)
	case audit.RefitNotConverged:
		budget := "no time budget"
		if w.Bound > 0 {
			budget = fmt.Sprintf("time budget %.3gs", w.Bound)
		}
		return fmt.Sprintf("%d of %.0f exact re-fits did not converge (iteration cap %.0f, %s): they are left out of the agreement figures; raise --retrain-max-iter or --retrain-budget", w.Count, w.Figure, w.Ratio, budget)
	case audit.RefitNotRun:
		return fmt.Sprintf("%d of %.0f exact re-fits were not run: the time budget (%.3gs) was spent before they started; they are left out of the agreement figures; raise --retrain-budget or re-train fewer blocks (--retrain)", w.Count, w.Figure, w.Bound)
	case audit.FullRefitNotConverged:
		return fmt.Sprintf("Re-training on all the data did not converge in its share of the budget (%s, gradient norm %.3g, bound %.3g), as for a model stopped early: each block was re-fitted from the trained parameters with the full-data gradient subtracted, and its exact change is measured from the trained parameters", plural(w.Count, "iteration"), w.Figure, w.Bound)
	case audit.TooWide:
		return fmt.Sprintf("The intervals are %.1f times as wide as the in-sample residual intervals (mean width %.4g against %.4g): too wide to be informative. Influence steps are being amplified: check the curvature (use the default Gauss-Newton), raise --damping, or compare with --calibration", w.Figure, w.Figure*w.Ratio, w.Ratio)
	case audit.WiderThanCalibrated:
		return fmt.Sprintf("The jackknife+ intervals are %.1f times as wide as split conformal on the calibration set (mean width %.4g against %.4g), whose coverage is guaranteed: prefer the calibrated intervals", w.Figure, w.Figure*w.Ratio, w.Ratio)
	case audit.PoorAgreement:
		if r.Setting.Curvature == "gauss-newton" {
			return fmt.Sprintf("Influence agrees poorly with exact re-training (mean cosine %.2f over %d blocks, prediction-change correlation %.2f): the Gauss-Newton matrix leaves out the Hessian's residual term, which shortens the leave-one-out steps of a model at a minimum; compare the coverage figures of the re-training, and where the Hessian has no negative eigenvalues try --curvature hessian", w.Figure, w.Count, w.Ratio)
		}
		return fmt.Sprintf("Influence agrees poorly with exact re-training (mean cosine %.2f over %d blocks, prediction-change correlation %.2f): treat the intervals with caution, or try the Gauss-Newton curvature or more damping", w.Figure, w.Count, w.Ratio)
	}
	return fmt.Sprintf("%s (figure %.4g, bound %.4g)", w.Code, w.Figure, w.Bound)
}

// stepCoverageText joins the step-coverage warnings into one paragraph:
// the steps below the guarantee, and, when the model's test errors exceed
// its training errors at every one of them, why.
func stepCoverageText(ws []audit.Warning) string {
	var parts []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, w := range ws {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ws)-5))
		} else if i < 5 {
			parts = append(parts, fmt.Sprintf("step %d: %.1f%% of %d values", w.Step+1, 100*w.Figure, w.Count))
		}
		lo, hi = math.Min(lo, w.Ratio), math.Max(hi, w.Ratio)
	}
	out := fmt.Sprintf("Coverage at some steps is below the %s that the jackknife+ guarantees (%s). Treat the intervals at these steps as too narrow.", pct0(ws[0].Bound), strings.Join(parts, "; "))
	if lo >= 1.2 {
		times := fmt.Sprintf("%.2g", lo)
		if h := fmt.Sprintf("%.2g", hi); h != times {
			times += " to " + h
		}
		out += fmt.Sprintf(" The model's errors there are %s times larger on the test data than on its training data: it fits training noise at these steps, and the leave-one-block-out models, which start from the trained model, keep part of that fit (the guarantee holds for models re-trained from scratch). More regularisation in training would help.", times)
	}
	return out
}

// notes are the audit's notes on its settings, as sentences.
func notes(r *audit.Result) []string {
	var out []string
	for _, n := range r.Setting.Notes {
		out = append(out, sentence(n))
	}
	return out
}

// sentence capitalises the first letter of s and ends it with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// fansLead explains the fan charts.
func fansLead(r *audit.Result) string {
	if r.Model.ManyToOne {
		return "One forecast per sequence: its interval (bar), the prediction (square), the observed value (dot, or a red cross when it lies outside its interval) and the thresholds (dashed); a triangle marks each interval that crosses a threshold. Unbounded limits are drawn to the edge of the chart. The chart shows the first sequences of the file."
	}
	chosen := "The sequences shown are the first of the file."
	if r.Setting.Low != nil || r.Setting.High != nil {
		chosen = "Up to half of the sequences shown are those with the most steps whose interval crosses a threshold; the others are the first of the file."
	}
	return "Prediction (blue line), interval (shaded band), observed values (dots, or red crosses where they lie outside their interval) and the thresholds (dashed); a triangle marks each step whose interval crosses a threshold. Unbounded limits are drawn to the edge of the chart. " + chosen
}

// row is one line of a two-column table.
type row struct{ Key, Value string }

// summaryRows are the headline metrics.
func summaryRows(r *audit.Result) []row {
	s := r.Summary
	if s == nil {
		return nil
	}
	rows := []row{
		{"Coverage", fmt.Sprintf("%s (target %s, guaranteed at least %s)", pct(s.Coverage), pct0(1-s.Alpha), pct0(1-2*s.Alpha))},
		{"Joint coverage (every step of a sequence)", pct(s.JointCoverage)},
		{"Mean interval width", num(s.MeanLength)},
		{"Unbounded intervals", count(s.Infinite)},
		{"Interval (Winkler) score", num(s.IntervalScore)},
		{"RMSE of the predictions", num(s.RMSE)},
		{"In-sample residual intervals: coverage", pct(s.Naive.Coverage)},
		{"In-sample residual intervals: mean width", num(s.Naive.MeanLength)},
		{"Width gap (jackknife+ − in-sample)", num(s.Gap)},
		{"Values evaluated", fmt.Sprintf("%s in %s (%s data)", count(s.Points), plural(len(r.Sequences), "sequence"), evaluated(r))},
	}
	switch {
	case r.Model.ManyToOne: // one forecast per sequence: joint coverage is the coverage
		rows = slices.Delete(rows, 1, 2)
	case r.Model.Horizons > 1:
		rows[1].Key = "Joint coverage (every forecast of a sequence)"
	}
	for h, c := range s.CoveragePerHorizon {
		rows = append(rows, row{fmt.Sprintf("Horizon %d (forecast of row t+%d): coverage, mean width", h, h),
			fmt.Sprintf("%s, %s (%s)", pct(c), num(at(s.LengthPerHorizon, h)), plural(atInt(s.PointsPerHorizon, h), "value"))})
	}
	return rows
}

// jointText says what joint coverage counts: every step of a sequence
// covered, or every forecast of it for several horizons; "" for one
// forecast per sequence, where joint coverage is the coverage.
func jointText(r *audit.Result) string {
	switch {
	case r.Model.ManyToOne:
		return ""
	case r.Model.Horizons > 1:
		return "every forecast of a sequence covered"
	}
	return "every step covered"
}

// at is v[i], NaN past the end.
func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return math.NaN()
}

// atInt is v[i], 0 past the end.
func atInt(v []int, i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// auditRow is one line of the precision/recall table.
type auditRow struct {
	Flag, Precision, Recall, Flagged, True, Actual string
}

func auditRows(r *audit.Result) []auditRow {
	if r.Summary == nil {
		return nil
	}
	var out []auditRow
	add := func(t *audit.Threshold, low bool) {
		if t == nil {
			return
		}
		var rule string
		if low {
			rule = fmt.Sprintf("lower limit < %s", num(t.Threshold))
		} else {
			rule = fmt.Sprintf("upper limit > %s", num(t.Threshold))
		}
		out = append(out, auditRow{
			Flag:      fmt.Sprintf("%s (%s)", thresholdName(t, low), rule),
			Precision: pct(t.Precision),
			Recall:    pct(t.Recall),
			Flagged:   count(t.Flagged),
			True:      count(t.True),
			Actual:    count(t.Actual),
		})
	}
	add(r.Summary.Audit.Low, true)
	add(r.Summary.Audit.High, false)
	return out
}

// settingRows describe how the audit ran.
func settingRows(r *audit.Result, o *Options) []row {
	st := r.Setting
	m := r.Model
	model := fmt.Sprintf("%s (ONNX opset %d, %s, %s)", orDash(m.Path), m.Opset, m.Layout, plural(m.Features, "feature"))
	out := []row{
		{"Model", model},
		{"Outputs", outputsText(m)},
		{"Parameters", fmt.Sprintf("%s in %s: %s", count(m.Params), plural(len(m.ParamNames), "tensor"), paramList(m.ParamNames, o))},
		{"Training data", fmt.Sprintf("%s (%s)", orDash(st.TrainFile), plural(st.TrainSeqs, "sequence"))},
	}
	if r.SelfAudit {
		out = append(out, row{"Evaluated data", "the training data (self-audit, leave one sequence out)"})
	} else {
		out = append(out, row{"Test data", fmt.Sprintf("%s (%s)", orDash(st.TestFile), plural(st.TestSeqs, "sequence"))})
	}
	if o != nil && o.Columns != nil {
		c := o.Columns
		cols := fmt.Sprintf("sequence id: %s; step: %s; target: %s; features: %s", c.ID, c.Time, c.Target, strings.Join(c.Features, ", "))
		if c.Shift != 0 {
			cols += fmt.Sprintf(" (target shifted by %d rows)", c.Shift)
		}
		out = append(out, row{"Columns", cols})
	}
	blocks := fmt.Sprintf("%s blocks, %s", st.Blocks, plural(st.NumBlocks, "block"))
	if st.BlockLength > 0 {
		blocks = fmt.Sprintf("%s blocks of %s, %s", st.Blocks, plural(st.BlockLength, "step"), plural(st.NumBlocks, "block"))
	}
	out = append(out,
		row{"Alpha", fmt.Sprintf("%s (target coverage %s, guaranteed %s)", num(st.Alpha), pct0(st.NominalCover), pct0(st.GuaranteedMin))},
		row{"Blocks", blocks},
		row{"Solver", fmt.Sprintf("%s, %s curvature, damping %s × mean eigenvalue", SolverText(st, r.Model.Params), st.Curvature, num(st.Damping))},
		row{"Loss", lossText(st)},
		row{"Seed", strconv.FormatUint(st.Seed, 10)},
	)
	if st.Low != nil {
		out = append(out, row{"Low threshold", num(*st.Low)})
	}
	if st.High != nil {
		out = append(out, row{"High threshold", num(*st.High)})
	}
	if o != nil && o.Command != "" {
		out = append(out, row{"Command", o.Command})
	}
	return out
}

// paramList names the parameter tensors, each with its role when
// o.ParamRoles has one: "onnx::RNN_40 (W of RNN node "rnn"), head.bias".
func paramList(names []string, o *Options) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if o != nil {
			if role := o.ParamRoles[n]; role != "" {
				out[i] += " (" + role + ")"
			}
		}
	}
	return strings.Join(out, ", ")
}

func lossText(st audit.Setting) string {
	if st.Ridge > 0 {
		return fmt.Sprintf("%s + ridge penalty (%s/2)|θ|²", st.Loss, num(st.Ridge))
	}
	return st.Loss
}

func outputsText(m audit.ModelInfo) string {
	switch {
	case m.ManyToOne:
		return "one forecast per sequence (many-to-one)"
	case m.Horizons > 1:
		return fmt.Sprintf("one forecast per step for each of %d horizons", m.Horizons)
	}
	return "one forecast per step"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// diagRows are the solver and stationarity diagnostics.
func diagRows(r *audit.Result) []row {
	d := r.Diag
	out := []row{
		{"Total gradient norm |∇L|", num(d.GradNorm)},
		{"Median block gradient norm", num(d.BlockGradMedian)},
		{"Stationarity ratio (should be small)", num(d.Stationarity)},
		{"Damping λ", num(d.Lambda)},
		{"Trace of the curvature", num(d.Trace)},
	}
	if !math.IsNaN(d.MinEig) || !math.IsNaN(d.MaxEig) {
		out = append(out, row{"Eigenvalues", fmt.Sprintf("from %s to %s", num(d.MinEig), num(d.MaxEig))})
	}
	if d.Rank > 0 {
		out = append(out, row{"Low-rank curvature", fmt.Sprintf("rank %s, %s curvature products, from %s training sequences", count(d.Rank), count(d.Products), count(d.CurvatureSequences))})
	}
	switch d.LeverageRule {
	case "in-sample":
		out = append(out, row{"Own leverage (estimated)", fmt.Sprintf("%s: below 0.01, so infinitesimal steps and in-sample own residuals", num(d.LeverageEstimate))})
	case "per-block":
		out = append(out, row{"Own leverage (estimated)", fmt.Sprintf("%s: per-block Jacobian rows for the steps and own residuals", num(d.LeverageEstimate))})
	}
	if d.RefinedBlocks+d.RefineSkipped > 0 {
		v := fmt.Sprintf("%s re-solved by conjugate gradients (%s curvature products), %s unbounded after", plural(d.RefinedBlocks, "block"), count(d.RefineProducts), count(d.UnboundedBlocks))
		if d.RefineSkipped > 0 {
			v += fmt.Sprintf("; %s left at the low-rank values (budget)", plural(d.RefineSkipped, "block"))
		}
		out = append(out, row{fmt.Sprintf("Leverage above %g, refined", audit.RefineLeverage), v})
	}
	if d.Iterations > 0 {
		out = append(out, row{"Solver iterations (most)", count(d.Iterations)})
		out = append(out, row{"Largest relative residual", num(d.MaxResidual)})
	}
	if len(d.InfluenceNorms) > 0 {
		lo, hi := minMax(d.InfluenceNorms)
		out = append(out, row{"Influence |Δθ|", fmt.Sprintf("from %s to %s over %s", num(lo), num(hi), plural(len(d.InfluenceNorms), "block"))})
	}
	return out
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// influenceRow is one line of the most-influential table.
type influenceRow struct{ Rank, Block, Norm, Shift string }

func influenceRows(r *audit.Result) []influenceRow {
	var out []influenceRow
	for i, e := range r.Diag.Influential {
		out = append(out, influenceRow{strconv.Itoa(i + 1), e.Block, num(e.Norm), num(e.PredShift)})
	}
	return out
}

// phaseRows are the phase times.
func phaseRows(r *audit.Result) []row {
	var out []row
	total := 0.0
	for _, p := range r.Diag.Phases {
		out = append(out, row{p.Name, seconds(p.Seconds)})
		total += p.Seconds
	}
	if len(out) > 0 {
		out = append(out, row{"total", seconds(total)})
	}
	return out
}

// retrainRows summarise the re-training comparison.
func retrainRows(r *audit.Result) []row {
	rt := r.Retrain
	if rt == nil {
		return nil
	}
	return []row{
		{"Blocks re-trained", count(len(rt.Blocks))},
		{"Re-fits converged / not converged / not run (budget)", fmt.Sprintf("%s / %s / %s", count(len(rt.Blocks)-rt.NotConverged-rt.NotRun), count(rt.NotConverged), count(rt.NotRun))},
		{"Cosine of parameter changes (mean, lowest)", fmt.Sprintf("%s, %s", num(rt.MeanCosine), num(rt.MinCosine))},
		{"Correlation of prediction changes", num(rt.PredCorrelation)},
		{"Coverage with exact / influence parameters", fmt.Sprintf("%s / %s", pct(rt.ExactCoverage), pct(rt.InfluenceCoverage))},
		{"Mean width with exact / influence parameters", widths(rt)},
	}
}

// widths compares the mean widths of the re-training comparison; they
// are NaN when every interval from so few blocks is unbounded.
func widths(rt *audit.RetrainResult) string {
	if math.IsNaN(rt.ExactLength) && math.IsNaN(rt.InfluenceLength) {
		return fmt.Sprintf("n/a: with %s the intervals are unbounded; re-train more blocks to compare widths", plural(len(rt.Blocks), "block"))
	}
	return fmt.Sprintf("%s / %s", num(rt.ExactLength), num(rt.InfluenceLength))
}

// retrainBlockRow is one re-trained block.
type retrainBlockRow struct{ Block, Cosine, Ratio, Iterations, Grad string }

func retrainBlockRows(r *audit.Result) []retrainBlockRow {
	rt := r.Retrain
	if rt == nil {
		return nil
	}
	at := func(v []float64, i int) string {
		if i < len(v) {
			return num(v[i])
		}
		return "n/a"
	}
	var out []retrainBlockRow
	for i, b := range rt.Blocks {
		it := "n/a"
		if i < len(rt.Iterations) {
			it = count(rt.Iterations[i])
		}
		out = append(out, retrainBlockRow{b, at(rt.Cosine, i), at(rt.NormRatio, i), it, at(rt.FinalGrad, i)})
	}
	return out
}

// SolverText names the solver of an audit and why it was used (the rule
// of audit.Solver), for the report and the command's summary.
func SolverText(st audit.Setting, params int) string {
	switch audit.SolverReason(st.SolverReason) {
	case audit.ReasonFewerTerms:
		return fmt.Sprintf("%s (exact, in the dual form: %s loss terms, no more than %s parameters)", st.Solver, count(st.LossTerms), count(params))
	case audit.ReasonSmallModel:
		return fmt.Sprintf("%s (dense: %s parameters, at most %s)", st.Solver, count(params), count(audit.AutoExactMax))
	case audit.ReasonLargeModel:
		return fmt.Sprintf("%s (%s parameters, more than %s for the dense solver; %s loss terms, more than the dual form takes)", st.Solver, count(params), count(audit.AutoExactMax), count(st.LossTerms))
	}
	return st.Solver
}
