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
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/audit/interval"
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
func thresholdName(t *interval.Threshold, low bool) string {
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
		t   *interval.Threshold
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

// verdict puts the audit's verdict (audit.Verdict: a level and its
// reasons, decided by the audit) into words: its level, for the colour of
// the headline, and one sentence per reason.
func verdict(r *audit.Result) (level, text string) {
	v := r.Verdict
	// Wrong columns first: they make every other figure moot, and a poor
	// verdict must not open with a reassuring sentence.
	var first, rest []string
	for _, why := range v.Reasons {
		t := reasonText(r, why)
		switch {
		case t == "":
		case why.Code == audit.WrongColumns:
			first = append(first, t)
		default:
			rest = append(rest, t)
		}
	}
	return string(v.Level), strings.Join(append(first, rest...), " ")
}

// stepList is "Step 10 is" or "Steps 9 and 10 are" (at most five named).
func stepList(rows []int, r *audit.Result) string {
	var names []string
	for i, t := range rows {
		if i == 5 {
			names = append(names, fmt.Sprintf("%d more", len(rows)-5))
			break
		}
		names = append(names, strconv.Itoa(t+1))
	}
	if len(rows) == 1 {
		return "Step " + names[0] + " is"
	}
	return "Steps " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are"
}

// guarantee is what the jackknife+ guarantees, with its condition.
func guarantee(alpha float64) string {
	return fmt.Sprintf("the %s that the jackknife+ guarantees when every leave-one-out model is re-trained exactly (here they are estimated)", pct0(1-2*alpha))
}

// reasonText is one reason of a verdict in words.
func reasonText(r *audit.Result, why audit.Reason) string {
	alpha := r.Setting.Alpha
	switch why.Code {
	case audit.NoTargets:
		return "Give labelled test data (a target column) to measure coverage."
	case audit.CoverageAbove:
		return fmt.Sprintf("Coverage is above the %s target: the intervals are on the safe side, perhaps wider than they need to be.", pct0(why.Bound))
	case audit.CoverageAt:
		return fmt.Sprintf("Coverage is at the %s target (within sampling error, ±%.1f points).", pct0(why.Bound), 100*why.Ratio)
	case audit.CoverageBelowTarget:
		if why.Figure >= why.Bound {
			return fmt.Sprintf("Coverage is below the %s target but above %s: the intervals are somewhat too narrow.", pct0(1-alpha), guarantee(alpha))
		}
		return fmt.Sprintf("Coverage is below the %s target and below %s, but within sampling error of it (±%.1f points): the intervals are too narrow.", pct0(1-alpha), guarantee(alpha), 100*why.Ratio)
	case audit.StepsNearBound:
		return fmt.Sprintf("%s below %s but within sampling error of it (lowest %s, tolerance ±%.1f points).", stepList(why.Steps, r), pct0(why.Bound), pct(why.Figure), 100*why.Ratio)
	case audit.CoverageBelowBound:
		return fmt.Sprintf("Coverage is below %s, by more than sampling error (±%.1f points): do not rely on these intervals; see the warnings and diagnostics.", guarantee(alpha), 100*why.Ratio)
	case audit.StepsBelowBound:
		return fmt.Sprintf("But at %s coverage is below %s by more than sampling error (lowest %s): see the warnings.", plural(why.Count, "step"), pct0(why.Bound), pct(why.Figure))
	case audit.Wide:
		ref := "the in-sample residual intervals"
		if why.Count == 1 {
			ref = "the split-conformal intervals of the calibration set"
		}
		return fmt.Sprintf("But they are %.1f times as wide as %s (mean width %s): too wide to be informative; see the warnings.", why.Figure, ref, num(why.Ratio))
	case audit.ManyUnbounded:
		return fmt.Sprintf("But %s of the intervals are unbounded: they say nothing there; see the warnings.", pct(why.Figure))
	case audit.SomeUnbounded:
		return fmt.Sprintf("But %s of the intervals are unbounded.", pct(why.Figure))
	case audit.WrongColumns:
		if b := r.Diag.Fit.BestAlternative(); b != nil {
			return fmt.Sprintf("The model fits its training data far better with %s (training RMSE %s against %s as given): the data are probably not given to it as it was trained; see the warnings.", b.Flags(), num(b.RMSE), num(why.Figure))
		}
	case audit.RidgeMismatch:
		return fmt.Sprintf("The training gradient points at a ridge of about %s, not the %s given: see the warnings.", num(why.Ratio), num(why.Bound))
	case audit.DampingSensitive:
		return fmt.Sprintf("But the mean width moves by %s when the damping is multiplied or divided by %d: the intervals depend on a setting the data do not pin down; see the diagnostics.", pct(why.Figure), audit.SensitivityFactor)
	case audit.Warned:
		return "Read the warnings before relying on the intervals."
	case audit.BeyondTraining:
		if r.Summary.Beyond.Inside {
			// Rows inside the training sequences' length that no
			// training sequence labels (empty target cells).
			return fmt.Sprintf("%s at steps where no training sequence has a label (the first at step %d) have no leave-one-out residual, so their intervals are unbounded: they are left out of these figures and reported apart.", plural(why.Count, "test value"), int(why.Bound)+1)
		}
		return fmt.Sprintf("%s at steps past every training sequence (from step %d; the longest training sequence has %s) have no leave-one-out residual, so their intervals are unbounded: they are left out of these figures and reported apart.", plural(why.Count, "test value"), int(why.Bound)+1, plural(r.Summary.Beyond.TrainRows, "row"))
	}
	return ""
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
	if b := s.Beyond; b != nil && b.Forecasts > 0 && b.Inside {
		out += fmt.Sprintf(" %s at steps where no training sequence has a target (the first at step %d), unbounded for that reason: not counted above.", pluralIs(b.Forecasts, "interval"), b.FromRow+1)
	} else if b != nil && b.Forecasts > 0 {
		out += fmt.Sprintf(" %s at steps from %d on, where no training sequence has a target (the longest has %s), unbounded for that reason: not counted above.", pluralIs(b.Forecasts, "interval"), b.FromRow+1, plural(b.TrainRows, "row"))
	}
	if s.Infinite > 0 {
		if n := r.Diag.UnboundedBlocks; n > 0 {
			out += fmt.Sprintf(" %s unbounded: %s that the model interpolates (unbounded leave-out residuals), or %s", pluralIs(s.Infinite, "interval"), plural(n, "training block"), tooFewResiduals(r))
		} else {
			out += fmt.Sprintf(" %s unbounded: %s", pluralIs(s.Infinite, "interval"), tooFewResiduals(r))
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
		case audit.NotStationary:
			// Said once, by fitText.
			continue
		}
		out = append(out, sentence(warningText(r, w)))
	}
	if ds := r.Diag.DampingSensitivity; ds != nil && hasReason(r, audit.DampingSensitive) {
		out = append(out, fmt.Sprintf("The intervals depend on the damping, a setting the data do not pin down: the mean width is %s; the influence steps of this model are bounded mostly by the damping, not by its curvature. Compare with intervals calibrated on held-out sequences (--calibration), or audit a model trained closer to a minimum of its loss.", sensitivityText(ds)))
	}
	// The joined warnings fill the places kept for them before the fit
	// warning goes first: prepending shifts every place by one.
	if stepsAt >= 0 {
		out[stepsAt] = stepCoverageText(steps)
	}
	if levAt >= 0 {
		out[levAt] = highLeverageText(lev)
	}
	if t, warn := fitText(r); warn {
		out = append([]string{t}, out...)
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
		return fmt.Sprintf("The model is not at a stationary point of its training loss: the total gradient is %.3g times the typical block gradient (above %g), as a mini-batch optimiser such as Adam leaves it. On its own this is no mistake and does not lower the verdict: the column and ridge checks tell a mistake from an ordinary model (the fit check), and the damping bounds what the leftover gradient does to the influence steps (the damping sensitivity)", w.Figure, w.Bound)
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
	case audit.CoverageDrift, audit.SerialCorrelation:
		return timeWarningText(r, w)
	case audit.TargetAsInput:
		return fmt.Sprintf("On all %d training sequences a feature column equals the target at the row the output forecasts: the model reads the value it forecasts, so its forecasts and errors there are not those of a forecast. If each window's target is on an extra row after the window, put it on the window's last row (the row the output forecasts) and delete the extra row; if the file holds the value at each step and the model forecasts the next, read it with --shift 1", w.Count)
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
			parts = append(parts, fmt.Sprintf("step %d: %.1f%% of %d values, sampling tolerance ±%.1f points", w.Step+1, 100*w.Figure, w.Count, 100*interval.CoverageTolerance(w.Bound, w.Count)))
		}
		lo, hi = math.Min(lo, w.Ratio), math.Max(hi, w.Ratio)
	}
	out := fmt.Sprintf("Coverage at some steps is below %s, the level the jackknife+ guarantees when every leave-one-out model is re-trained exactly, by more than sampling error (%s). Here the leave-one-out models are estimated from the trained model, so that guarantee does not hold as such. Treat the intervals at these steps as too narrow.", pct0(ws[0].Bound), strings.Join(parts, "; "))
	if lo >= audit.OverfitRatio {
		times := fmt.Sprintf("%.2g", lo)
		if h := fmt.Sprintf("%.2g", hi); h != times {
			times += " to " + h
		}
		out += fmt.Sprintf(" The model's errors there are %s times larger on the test data than on its training data: it fits training noise at these steps, and the leave-one-block-out models, which start from the trained model, keep part of that fit (the guarantee holds for models re-trained from scratch). More regularisation in training would help.", times)
	}
	return out
}

// methodText names the method that ran, for a report's footer: the
// blockwise jackknife+ with its leave-one-block-out estimator.
func methodText(r *audit.Result) string {
	est := "Newton steps on the leave-block-out loss"
	if r.Setting.Estimator == "infinitesimal" {
		est = "the infinitesimal jackknife"
	}
	return fmt.Sprintf("blockwise jackknife+, leave-one-block-out models estimated by %s, %s curvature", est, r.Setting.Curvature)
}

// notes are the audit's notes on its settings, as sentences, what the
// column check found when it is no warning, and the advice on the block
// scheme.
func notes(r *audit.Result) []string {
	var out []string
	for _, n := range r.Setting.Notes {
		out = append(out, sentence(n))
	}
	if t, warn := fitText(r); t != "" && !warn {
		out = append(out, t)
	}
	if t := schemeText(r); t != "" {
		out = append(out, t)
	}
	return out
}

// hasReason reports whether the verdict has a reason with the code.
func hasReason(r *audit.Result, code audit.ReasonCode) bool {
	for _, why := range r.Verdict.Reasons {
		if why.Code == code {
			return true
		}
	}
	return false
}

// alternativesText lists the alternatives' training RMSEs:
// "0.52 with --features b,a --shift 1; 1.19 with --shift 0".
func alternativesText(f *datacheck.FitCheck) string {
	var parts []string
	for _, a := range f.Alternatives {
		parts = append(parts, fmt.Sprintf("%s with %s", num(a.RMSE), a.Flags()))
	}
	return strings.Join(parts, "; ")
}

// fitText is the one message about the model's fit to its training data:
// a warning (warn) when the column check finds a better mapping or the
// ridge check another ridge; else, when the model is not at a stationary
// point, a note saying that the columns check out and what the leftover
// gradient means; "" otherwise.
func fitText(r *audit.Result) (text string, warn bool) {
	f := r.Diag.Fit
	if f == nil {
		return "", false
	}
	ratio := r.Diag.Stationarity
	switch {
	case hasReason(r, audit.WrongColumns):
		b := f.BestAlternative()
		return fmt.Sprintf("The model fits its training data far better with %s (training RMSE %s) than with the columns as given (%s; on %s): these are probably not the columns it was trained on, in its order, or not the shift it forecasts at. Rerun with those flags, or check --features, --target and --shift against the training script. The intervals below are for a model given the wrong inputs (stationarity ratio %s). Other mappings: %s.",
			b.Flags(), num(b.RMSE), num(f.RMSE), plural(f.Sequences, "training sequence"), num(ratio), alternativesText(f)), true
	case len(f.Untrained) > 0:
		var names []string
		for _, u := range f.Untrained {
			names = append(names, fmt.Sprintf("%s (%s times the median tensor's gradient per value, %s)", u.Name, num(u.RMS/u.Median), num(u.Median)))
		}
		return fmt.Sprintf("Some parameters do not look trained: %s. At the trained point the gradient of the training objective, with the ridge, is near zero for every trained tensor; these carry most of it, as buffers exported beside the weights do (a scaler's statistics, a mask, a position table). If they were not trained, leave them out: %s. Otherwise check --ridge and the loss against the training.",
			strings.Join(names, "; "), datacheck.ExcludeFlag(f.Untrained)), true
	case hasReason(r, audit.RidgeMismatch):
		return fmt.Sprintf("The training gradient is %s times smaller with a ridge of %s than with the %s given (--ridge): the model was probably trained with another penalty. PyTorch's weight_decay w with a loss averaged over N terms is --ridge w·N (here N = %s). The columns check out: training RMSE %s as given (compare with the training log); %s.",
			num(f.GradNorm/f.FittedGradNorm), num(f.FittedRidge), num(f.Ridge), count(r.Setting.LossTerms), num(f.RMSE), alternativesText(f)), true
	case ratio > audit.StationarityBound:
		return fmt.Sprintf("The model is not at a stationary point of its training loss (the total gradient is %s times the typical block gradient), as a mini-batch optimiser such as Adam leaves it; the data check out: training RMSE %s with the columns as given (compare it with the last loss of the training log, in RMSE), against %s. The damping bounds what the leftover gradient does to the influence steps: see the damping sensitivity in the diagnostics.",
			num(ratio), num(f.RMSE), alternativesText(f)), false
	}
	return "", false
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
func fansLead(r *audit.Result, sel FanSelection) string {
	if r.Model.ManyToOne {
		chosen := "The chart shows the first sequences of the file."
		if sel.Mode != FanAuto {
			chosen = sel.describe(r)
		}
		return "One forecast per sequence: its interval (bar), the prediction (square), the observed value (dot, or a red cross when it lies outside its interval) and the thresholds (dashed); a triangle marks each interval that crosses a threshold. Unbounded limits are drawn to the edge of the chart. " + chosen
	}
	return "Prediction (blue line), interval (shaded band), observed values (dots, or red crosses where they lie outside their interval) and the thresholds (dashed); a triangle marks each step whose interval crosses a threshold. Unbounded limits are drawn to the edge of the chart. " + sel.describe(r)
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
		{"Coverage", fmt.Sprintf("%s (target %s; at least %s guaranteed only with exact re-training)", pct(s.Coverage), pct0(1-s.Alpha), pct0(1-2*s.Alpha))},
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
	case r.Summary != nil && r.Summary.OverTime != nil && r.Summary.OverTime.Long:
		// Over long series every step of a sequence is never covered:
		// the figure says nothing (coverage over time does).
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
	add := func(t *interval.Threshold, low bool) {
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
		row{"Alpha", fmt.Sprintf("%s (target coverage %s; %s guaranteed with exact re-training)", num(st.Alpha), pct0(st.NominalCover), pct0(st.GuaranteedMin))},
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
	if v := o.toolVersion(); v != "" {
		out = append(out, row{"Tool version", v})
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
	if ds := d.DampingSensitivity; ds != nil {
		out = append(out, row{fmt.Sprintf("Damping × and ÷ %d: mean width", audit.SensitivityFactor), sensitivityText(ds)})
	}
	if f := d.Fit; f != nil {
		out = append(out, row{"Training RMSE, columns as given", fmt.Sprintf("%s (on %s; compare with the training log)", num(f.RMSE), plural(f.Sequences, "sequence"))})
		if len(f.Alternatives) > 0 {
			out = append(out, row{"Training RMSE, other mappings", alternativesText(f)})
		}
		if !math.IsNaN(f.FittedGradNorm) {
			out = append(out, row{"Ridge that best explains the gradient", fmt.Sprintf("%s (gradient %s; with the given %s: %s)", num(f.FittedRidge), num(f.FittedGradNorm), num(f.Ridge), num(f.GradNorm))})
		}
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

// skippedSensitivityText is the reason the damping check was not run,
// with what that means for the reader: the intervals stand as computed,
// but how far they move with the damping is not known, and the two
// re-runs that would tell (the ones the check makes) are named.
func skippedSensitivityText(ds *audit.DampingSensitivity) string {
	if !(ds.Rho > 0) {
		return ds.Reason
	}
	return fmt.Sprintf("%s. The intervals are not affected, but whether they depend on the damping is not known: "+
		"to check by hand, compare the mean width with that of two runs with --damping %.3g and --damping %.3g",
		ds.Reason, ds.Rho*audit.SensitivityFactor, ds.Rho/audit.SensitivityFactor)
}

// sensitivityText says how the mean width moves with the damping.
func sensitivityText(ds *audit.DampingSensitivity) string {
	if !ds.Computed {
		return skippedSensitivityText(ds)
	}
	move := func(f audit.DampedFigures) string {
		return fmt.Sprintf("%s at ρ = %s (%+.0f%%, coverage %s)", num(f.MeanLength), num(f.Rho), 100*(f.MeanLength/ds.Base()-1), pct(f.Coverage))
	}
	out := fmt.Sprintf("%s at ρ = %s; %s; %s", num(ds.Base()), num(ds.Rho), move(ds.Low), move(ds.High))
	if ds.Sampled > 0 {
		out = fmt.Sprintf("on %d of %d sequences drawn at random: ", ds.Sampled, ds.Sequences) + out +
			fmt.Sprintf(" (standard error of the largest move %s)", num(ds.WidthShareSE()))
	}
	if ds.WidthShare() > audit.DampingShare {
		out += fmt.Sprintf(": moves by more than %s, so the intervals depend on the damping", pct0(audit.DampingShare))
	} else {
		out += fmt.Sprintf(": within %s", pct0(audit.DampingShare))
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
	return append(earlyStopRows(r), []row{
		{"Blocks re-trained", count(len(rt.Blocks))},
		{"Re-fits converged / not converged / not run (budget)", fmt.Sprintf("%s / %s / %s", count(len(rt.Blocks)-rt.NotConverged-rt.NotRun), count(rt.NotConverged), count(rt.NotRun))},
		{"Start of the block re-fits", refitStartText(rt)},
		{"Cosine of parameter changes (mean, lowest)", fmt.Sprintf("%s, %s", num(rt.MeanCosine), num(rt.MinCosine))},
		{"Correlation of prediction changes", num(rt.PredCorrelation)},
		{"Coverage with exact / influence parameters", fmt.Sprintf("%s / %s", pct(rt.ExactCoverage), pct(rt.InfluenceCoverage))},
		{"Mean width with exact / influence parameters", widths(rt)},
	}...)
}

// earlyStopRows say how the early-stopping estimate's damping was chosen
// (--train-budget) and how it agrees with the budgeted re-fits it was
// measured on.
func earlyStopRows(r *audit.Result) []row {
	e := r.Diag.EarlyStop
	if e == nil {
		return nil
	}
	how := "derived from the training budget"
	if e.Source == "fitted" {
		how = "fitted to budgeted re-fits"
	}
	return []row{
		{"Early-stopping estimate: damping", fmt.Sprintf("%s (%s): lambda %s (rho %s; derived from the budget: %s)", how, e.Budget, num(e.Lambda), num(e.Rho), num(e.Derived))},
		{"Agreement with budgeted re-fits (cosine, relative error, curvature norm)", fmt.Sprintf("%s, %s on %s (%s start)", num(e.Cosine), num(e.RelError), plural(len(e.Blocks), "block"), e.Start)},
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
	out := solverWhy(st, params)
	if st.SolverPrediction != "" {
		out += "; " + st.SolverPrediction
	}
	return out
}

// solverWhy is SolverText without the cost model's prediction.
func solverWhy(st audit.Setting, params int) string {
	switch audit.SolverReason(st.SolverReason) {
	case audit.ReasonPredicted:
		return fmt.Sprintf("%s (predicted much faster than the others for %s parameters and %s loss terms)", st.Solver, count(params), count(st.LossTerms))
	case audit.ReasonFewerTerms:
		return fmt.Sprintf("%s (exact, in the dual form: %s loss terms, no more than %s parameters)", st.Solver, count(st.LossTerms), count(params))
	case audit.ReasonSmallModel:
		return fmt.Sprintf("%s (dense: %s parameters, at most %s)", st.Solver, count(params), count(audit.AutoExactMax))
	case audit.ReasonLargeModel:
		return fmt.Sprintf("%s (%s parameters, more than %s for the dense solver; %s loss terms, more than the dual form takes)", st.Solver, count(params), count(audit.AutoExactMax), count(st.LossTerms))
	}
	return st.Solver
}
