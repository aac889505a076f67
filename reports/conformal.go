package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// This file renders what a held-out calibration set adds (audit.Conformal):
// the comparison of every kind of interval, the recommendation and the
// calibrated limits in the JSON.

// kindName is the name a report gives a kind of interval.
func kindName(kind string) string {
	switch kind {
	case interval.KindJackknife:
		return "jackknife+"
	case interval.KindConformalJackknife:
		return "conformalized jackknife+"
	case interval.KindSplit:
		return "split conformal"
	case interval.KindNormalised:
		return "normalised split conformal"
	case interval.KindBonferroni:
		return "split conformal, Bonferroni (joint)"
	case interval.KindInSample:
		return "in-sample residuals"
	}
	return kind
}

// kindShort is the name of a kind in a table header.
func kindShort(kind string) string {
	switch kind {
	case interval.KindConformalJackknife:
		return "conf. jackknife+"
	case interval.KindSplit:
		return "split"
	case interval.KindNormalised:
		return "normalised"
	case interval.KindBonferroni:
		return "Bonferroni"
	case interval.KindInSample:
		return "in-sample"
	}
	return kindName(kind)
}

// kindGuarantee says what each kind guarantees.
func kindGuarantee(kind string, alpha float64) string {
	switch kind {
	case interval.KindJackknife:
		return fmt.Sprintf("at least %s with exact re-training", pct0(1-2*alpha))
	case interval.KindConformalJackknife, interval.KindSplit, interval.KindNormalised:
		return fmt.Sprintf("at least %s per step", pct0(1-alpha))
	case interval.KindBonferroni:
		return fmt.Sprintf("every step of a sequence at once, at least %s", pct0(1-alpha))
	}
	return "none"
}

// conformalHint is the one line a report without a calibration set gives
// about what one would add ("" when there is one).
func conformalHint(r *audit.Result) string {
	if r.Conformal != nil {
		return ""
	}
	return "A held-out calibration set (--calibration cal.csv: labelled sequences the model was not trained on, beside --test) would add split-conformal and conformalized jackknife+ intervals, whose per-step coverage is guaranteed whatever the model, and compare every kind of interval."
}

// shortText says where a kind's coverage falls short.
func shortText(sf audit.Shortfall) string {
	switch {
	case sf.Joint:
		return fmt.Sprintf("joint coverage %s", pct(sf.Coverage))
	case sf.Step >= 0:
		return fmt.Sprintf("coverage %s at step %d", pct(sf.Coverage), sf.Step+1)
	}
	return fmt.Sprintf("coverage %s", pct(sf.Coverage))
}

// recommendation puts the audit's recommendation (audit.Recommendation:
// the kind chosen on the calibration values, checked on the labelled
// test values) into plain words. kind is "" when no kind qualifies on the
// calibration values or there is nothing to choose from (no
// Conformal.Recommendation).
func recommendation(r *audit.Result) (kind, text string) {
	c, s := r.Conformal, r.Summary
	if c == nil || s == nil || c.Recommendation == nil {
		return "", ""
	}
	rec := c.Recommendation
	var b strings.Builder
	var best *interval.CalibrationFigures
	var good, fail []string
	for i := range c.Calibrated {
		f := &c.Calibrated[i]
		switch {
		case f.Kind == rec.Kind:
			best = f
		case !rec.CalHolds[i]:
			fail = append(fail, fmt.Sprintf("%s (calibration %s)", kindName(f.Kind), shortText(rec.CalShort[i])))
		case f.Unbounded < f.Values:
			good = append(good, fmt.Sprintf("%s %s", kindName(f.Kind), calWidthText(f)))
		}
	}
	if best == nil {
		if len(fail) == 0 {
			b.WriteString("The calibration set is too small for finite calibrated intervals (see the notes), and no jackknife+ interval is bounded: compare the kinds with more calibration sequences.")
		} else {
			fmt.Fprintf(&b, "No kind of interval holds the %s target on the %s calibration values with a bounded interval: %s.",
				pct0(1-s.Alpha), count(c.Values), strings.Join(fail, "; "))
		}
		checkText(&b, r, "")
		return "", b.String()
	}
	fmt.Fprintf(&b, "Use %s, chosen on the %s calibration values: ", kindName(best.Kind), count(best.Values))
	if best.Guaranteed {
		fmt.Fprintf(&b, "its coverage there holds by construction (guaranteed %s for sequences like them)", kindGuarantee(best.Kind, s.Alpha))
	} else {
		fmt.Fprintf(&b, "its coverage there holds (%s, target %s; guaranteed %s)", pct(best.Coverage), pct0(1-s.Alpha), kindGuarantee(best.Kind, s.Alpha))
	}
	fmt.Fprintf(&b, " and its mean width there, %s, is the narrowest", calWidthText(best))
	if len(good) > 0 {
		fmt.Fprintf(&b, " of the kinds that hold (%s)", strings.Join(good, ", "))
	} else {
		b.WriteString(" that holds")
	}
	b.WriteString(".")
	if len(fail) > 0 {
		fmt.Fprintf(&b, " Short of the target: %s.", strings.Join(fail, "; "))
	}
	checkText(&b, r, best.Kind)
	return best.Kind, b.String()
}

// checkText adds to a recommendation what the labelled test values say
// of the chosen kind (none: "") and of the other kinds: the check of the
// choice, the unbounded kinds, the Bonferroni intervals.
func checkText(b *strings.Builder, r *audit.Result, chosen string) {
	c, s, rec := r.Conformal, r.Summary, r.Conformal.Recommendation
	var unbounded, fail []string
	for i := range c.Kinds {
		k := &c.Kinds[i]
		if k.Kind != interval.KindBonferroni && k.Kind != interval.KindInSample && k.Infinite == s.Points {
			unbounded = append(unbounded, kindName(k.Kind))
		}
		switch {
		case k.Kind == chosen && rec.Holds[i]:
			fmt.Fprintf(b, " On the test data, the check of that choice, its coverage holds (%s of %s values, mean width %s).", pct(k.Coverage), count(s.Points), widthText(k))
		case k.Kind == chosen:
			fmt.Fprintf(b, " On the test data, the check of that choice, it falls short (%s of %s values; %s): the calibration and test sequences may not be alike (a shift between them), or the calibration set is small: check both.",
				pct(k.Coverage), count(s.Points), shortText(rec.Short[i]))
		case audit.Eligible(k, s) && !rec.Holds[i]:
			fail = append(fail, fmt.Sprintf("%s (%s)", kindName(k.Kind), shortText(rec.Short[i])))
		}
	}
	if len(fail) > 0 {
		fmt.Fprintf(b, " Short of the target on the test data: %s.", strings.Join(fail, "; "))
	}
	if len(unbounded) > 0 {
		fmt.Fprintf(b, " Every %s interval is unbounded: the calibration set has too few sequences for this alpha.", strings.Join(unbounded, " and every "))
	}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		switch {
		case k.Kind != interval.KindBonferroni:
		case k.Infinite == s.Points:
			b.WriteString(" Joint coverage of whole sequences (Bonferroni) needs more calibration sequences: those intervals are unbounded.")
		case rec.Holds[i]:
			fmt.Fprintf(b, " To cover every step of a sequence at once, use the Bonferroni intervals: joint coverage %s, mean width %s.", pct(k.JointCoverage), widthText(k))
		}
	}
}

// calWidthText is a kind's mean width at the calibration values, with
// the count of unbounded intervals.
func calWidthText(f *interval.CalibrationFigures) string {
	if f.Unbounded > 0 {
		return fmt.Sprintf("%s (%s unbounded)", num(f.MeanWidth), count(f.Unbounded))
	}
	return num(f.MeanWidth)
}

// widthText is the mean width, with the count of unbounded intervals.
func widthText(k *interval.KindSummary) string {
	if math.IsNaN(k.MeanLength) && k.Infinite > 0 {
		return "unbounded"
	}
	if k.Infinite > 0 {
		return fmt.Sprintf("%s (%s unbounded)", num(k.MeanLength), count(k.Infinite))
	}
	return num(k.MeanLength)
}

// kindRow is one line of the comparison of interval kinds.
type kindRow struct {
	Kind, Guarantee, Coverage, Joint, Width, Unbounded, Score string
	LowPrec, LowRec, HighPrec, HighRec                        string
	Recommended                                               bool
}

func kindRows(r *audit.Result) []kindRow {
	c := r.Conformal
	if c == nil || r.Summary == nil {
		return nil
	}
	rec, _ := recommendation(r)
	prec := func(t *interval.Threshold) (string, string) {
		if t == nil {
			return "–", "–"
		}
		return pct(t.Precision), pct(t.Recall)
	}
	var out []kindRow
	for _, k := range c.Kinds {
		row := kindRow{Kind: kindName(k.Kind), Guarantee: kindGuarantee(k.Kind, r.Summary.Alpha), Coverage: pct(k.Coverage),
			Joint: pct(k.JointCoverage), Width: num(k.MeanLength), Unbounded: count(k.Infinite), Score: num(k.IntervalScore),
			Recommended: k.Kind == rec}
		row.LowPrec, row.LowRec = prec(k.Audit.Low)
		row.HighPrec, row.HighRec = prec(k.Audit.High)
		out = append(out, row)
	}
	return out
}

// kindHeader is the header of the comparison table; the threshold
// columns appear only for the thresholds that were asked for.
func kindHeader(r *audit.Result) []string {
	h := []string{"Interval", "Guarantee", "Coverage", "Joint coverage", "Mean width", "Unbounded", "Winkler score"}
	if r.Setting.Low != nil {
		h = append(h, "P_low precision", "P_low recall")
	}
	if r.Setting.High != nil {
		h = append(h, "P_high precision", "P_high recall")
	}
	return h
}

// cells is the row as table cells matching kindHeader.
func (k kindRow) cells(r *audit.Result) []string {
	name := k.Kind
	if k.Recommended {
		name += " (recommended)"
	}
	out := []string{name, k.Guarantee, k.Coverage, k.Joint, k.Width, k.Unbounded, k.Score}
	if r.Setting.Low != nil {
		out = append(out, k.LowPrec, k.LowRec)
	}
	if r.Setting.High != nil {
		out = append(out, k.HighPrec, k.HighRec)
	}
	return out
}

// kindStepTable is coverage and mean width per step of every kind, with
// the calibration values and the jackknife+ scale at the step (horizon 0).
func kindStepTable(r *audit.Result) (head []string, rows [][]string) {
	c := r.Conformal
	if c == nil || r.Summary == nil {
		return nil, nil
	}
	head = []string{"Step", "Calibration values", "Jackknife+ scale"}
	for _, k := range c.Kinds {
		head = append(head, kindShort(k.Kind)+" coverage", kindShort(k.Kind)+" width")
	}
	byRow := map[int]interval.ConformalForecast{}
	for _, f := range c.Forecasts {
		if f.Horizon == 0 {
			byRow[f.Row] = f
		}
	}
	stepOf := stepValues(r)
	for t := range r.Summary.CoveragePerStep {
		if t < len(r.Summary.PointsPerStep) && r.Summary.PointsPerStep[t] == 0 {
			continue
		}
		label := fmt.Sprint(t + 1)
		if v, ok := stepOf[t]; ok {
			label = step(v)
		}
		f, ok := byRow[t]
		m, sc := "0", "n/a"
		if ok {
			m, sc = count(f.M), num(f.Scale)
		}
		row := []string{label, m, sc}
		for _, k := range c.Kinds {
			row = append(row, pct(at(k.CoveragePerStep, t)), num(at(k.LengthPerStep, t)))
		}
		rows = append(rows, row)
	}
	return head, rows
}

// stepValues maps a row to its step value when every sequence agrees on it.
func stepValues(r *audit.Result) map[int]float64 {
	out := map[int]float64{}
	bad := map[int]bool{}
	for _, s := range r.Sequences {
		for _, st := range s.Steps {
			if v, ok := out[st.Row]; ok && v != st.Step {
				bad[st.Row] = true
			}
			out[st.Row] = st.Step
		}
	}
	for t := range bad {
		delete(out, t)
	}
	return out
}

// conformalLead introduces the comparison.
func conformalLead(r *audit.Result) string {
	c := r.Conformal
	return fmt.Sprintf("Calibrated on %s (%s, %s) held out from training. Split conformal: prediction ± the calibration quantile of |residuals| at each step. Conformalized jackknife+: each jackknife+ interval scaled about its prediction by the factor per step that makes it cover the calibration values (a scale above 1 means the jackknife+ was too narrow there). Both cover each step with probability at least %s for test sequences exchangeable with the calibration sequences; the Bonferroni variant covers whole sequences.",
		orDash(c.File), plural(c.Sequences, "sequence"), plural(c.Values, "value"), pct0(1-r.Setting.Alpha))
}

// conformalNotes are the notes of the calibration, as sentences.
func conformalNotes(r *audit.Result) []string {
	if r.Conformal == nil {
		return nil
	}
	var out []string
	for _, n := range r.Conformal.Notes {
		out = append(out, sentence(n))
	}
	return out
}

// JSON.

type jsonConformal struct {
	File           string              `json:"file"`
	Sequences      int                 `json:"sequences"`
	Values         int                 `json:"values"`
	Forecasts      []jsonConfForecast  `json:"forecasts"`
	Kinds          []jsonKind          `json:"kinds"`
	Recommendation *jsonRecommendation `json:"recommendation"`
	Notes          []string            `json:"notes"`
}

type jsonConfForecast struct {
	Row               int  `json:"row"`
	Horizon           int  `json:"horizon"`
	M                 int  `json:"m"`
	Pooled            int  `json:"pooled_values,omitempty"`
	HalfWidth         fnum `json:"half_width"`
	Scale             fnum `json:"scale"`
	JackknifeCoverage fnum `json:"jackknife_coverage"`
}

type jsonKind struct {
	Kind            string    `json:"kind"`
	Coverage        fnum      `json:"coverage"`
	CoveragePerStep []fnum    `json:"coverage_per_step"`
	JointCoverage   fnum      `json:"joint_coverage"`
	MeanLength      fnum      `json:"mean_length"`
	LengthPerStep   []fnum    `json:"length_per_step"`
	Infinite        int       `json:"infinite_intervals"`
	IntervalScore   fnum      `json:"interval_score"`
	Audit           jsonAudit `json:"audit"`
	Holds           bool      `json:"coverage_holds"`
}

type jsonRecommendation struct {
	Kind *string `json:"kind"`
	Text string  `json:"text"`
}

func jsonConformalOf(r *audit.Result) *jsonConformal {
	c := r.Conformal
	if c == nil {
		return nil
	}
	out := &jsonConformal{File: c.File, Sequences: c.Sequences, Values: c.Values,
		Forecasts: make([]jsonConfForecast, len(c.Forecasts)), Kinds: []jsonKind{}, Notes: orEmpty(c.Notes)}
	for i, f := range c.Forecasts {
		out.Forecasts[i] = jsonConfForecast{f.Row, f.Horizon, f.M, f.Pooled, fnum(f.HalfWidth), fnum(f.Scale), fnum(f.JackknifeCoverage)}
	}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		ok := c.Recommendation != nil && c.Recommendation.Holds[i]
		out.Kinds = append(out.Kinds, jsonKind{Kind: k.Kind, Coverage: fnum(k.Coverage), CoveragePerStep: fnums(k.CoveragePerStep),
			JointCoverage: fnum(k.JointCoverage), MeanLength: fnum(k.MeanLength), LengthPerStep: fnums(k.LengthPerStep),
			Infinite: k.Infinite, IntervalScore: fnum(k.IntervalScore),
			Audit: jsonAudit{jsonThresholdOf(k.Audit.Low), jsonThresholdOf(k.Audit.High)}, Holds: ok})
	}
	if kind, text := recommendation(r); text != "" {
		out.Recommendation = &jsonRecommendation{Text: text}
		if kind != "" {
			out.Recommendation.Kind = &kind
		}
	}
	return out
}

// jsonStepConformal are the calibrated limits of one step, written in
// the step's line (null when unbounded).
type jsonStepConformal struct {
	SplitLower      *fnum `json:"split_lower,omitempty"`
	SplitUpper      *fnum `json:"split_upper,omitempty"`
	BonferroniLower *fnum `json:"bonferroni_lower,omitempty"`
	BonferroniUpper *fnum `json:"bonferroni_upper,omitempty"`
	JackknifeLower  *fnum `json:"conformal_jackknife_lower,omitempty"`
	JackknifeUpper  *fnum `json:"conformal_jackknife_upper,omitempty"`
	NormalisedLower *fnum `json:"normalised_lower,omitempty"`
	NormalisedUpper *fnum `json:"normalised_upper,omitempty"`
	M               *int  `json:"m_calibration,omitempty"`
}

func jsonStepConformalOf(c *interval.StepConformal) jsonStepConformal {
	if c == nil {
		return jsonStepConformal{}
	}
	m := c.M
	j := jsonStepConformal{fptr(c.SplitLower), fptr(c.SplitUpper), fptr(c.BonferroniLower), fptr(c.BonferroniUpper),
		fptr(c.JackknifeLower), fptr(c.JackknifeUpper), nil, nil, &m}
	if !math.IsNaN(c.NormalisedLower) {
		j.NormalisedLower, j.NormalisedUpper = fptr(c.NormalisedLower), fptr(c.NormalisedUpper)
	}
	return j
}

// conformalLines are the lines under the headline about calibration: the
// recommendation with a calibration set, or one line on what a
// calibration set would add.
func conformalLines(r *audit.Result) []string {
	if h := conformalHint(r); h != "" {
		return []string{h}
	}
	if _, text := recommendation(r); text != "" {
		return []string{text}
	}
	return nil
}

// writeConformalMarkdown writes the comparison of interval kinds.
func writeConformalMarkdown(md *mdWriter, r *audit.Result) {
	if r.Conformal == nil {
		return
	}
	fmt.Fprintf(md.b, "## Interval kinds compared\n\n%s\n\n", mdEscape(conformalLead(r)))
	if rows := kindRows(r); len(rows) > 0 {
		var cells [][]string
		for _, k := range rows {
			cells = append(cells, k.cells(r))
		}
		head := kindHeader(r)
		md.table(head, "ll"+strings.Repeat("r", len(head)-2), cells)
	}
	if head, rows := kindStepTable(r); len(rows) > 0 {
		fmt.Fprintf(md.b, "### Coverage and mean width per step\n\n")
		md.table(head, strings.Repeat("r", len(head)), rows)
	}
	if ns := conformalNotes(r); len(ns) > 0 {
		md.list(ns)
	}
}

// conformalView is the comparison of interval kinds for the HTML page.
type conformalView struct {
	Lead           string
	Head, StepHead []string
	Rows, StepRows [][]string
	Notes          []string
}

func newConformalView(r *audit.Result) *conformalView {
	if r.Conformal == nil {
		return nil
	}
	v := &conformalView{Lead: conformalLead(r), Notes: conformalNotes(r)}
	if rows := kindRows(r); len(rows) > 0 {
		v.Head = kindHeader(r)
		for _, k := range rows {
			v.Rows = append(v.Rows, k.cells(r))
		}
	}
	v.StepHead, v.StepRows = kindStepTable(r)
	return v
}
