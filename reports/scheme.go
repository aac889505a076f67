package reports

import (
	"fmt"
	"math"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
)

// schemeText puts the audit's advice on the block scheme
// (datacheck.SchemeAdvice) into words: which scheme fits the training data's
// shape and the serial correlation of its residuals, why, and what to
// change when the scheme in use does not fit. "" without advice.
func schemeText(r *audit.Result) string {
	a := r.Diag.Scheme
	if a == nil {
		return ""
	}
	var out string
	switch a.Shape {
	case datacheck.ShapeMany:
		out = fmt.Sprintf("Block scheme: the training data are %s (median %s), so sequence blocks fit: each block is one whole sequence, the unit new data come in, whatever serial correlation a sequence's errors have stays inside its own block, and every step has a residual from each sequence.",
			plural(a.Sequences, "sequence"), plural(a.MedianLength, "row"))
	case datacheck.ShapeOne:
		out = fmt.Sprintf("Block scheme: the training data are one sequence of %s, so interval blocks fit: they leave out stretches of time (nested blocks would delete the whole series with every block).",
			plural(a.MaxLength, "row"))
	default:
		out = fmt.Sprintf("Block scheme: the training data are %s (median %s), too few to leave out one at a time (sequence blocks are advised from %d at alpha %s), so nested blocks fit, or interval blocks: they leave out stretches of time, nested blocks in one sequence at a time.",
			plural(a.Sequences, "sequence"), plural(a.MedianLength, "row"), datacheck.ManySequences(r.Setting.Alpha), step(r.Setting.Alpha))
	}
	out += " " + correlationText(a)
	if !a.Fits {
		out += " " + mismatchText(a)
	}
	return out
}

// correlationText words the serial correlation of the training residuals
// and, for interval and nested blocks, the block length it asks for.
func correlationText(a *datacheck.SchemeAdvice) string {
	switch {
	case a.Pairs == 0 || math.IsNaN(a.Lag1):
		return "No sequence has two consecutive forecasts, so the residuals' serial correlation is not measured."
	case !a.Correlated:
		return fmt.Sprintf("The training residuals show no serial correlation to speak of (lag-1 autocorrelation %s over %s).",
			num(a.Lag1), plural(a.Pairs, "pair"))
	case a.Shape == datacheck.ShapeMany:
		return fmt.Sprintf("The training residuals are serially correlated (lag-1 autocorrelation %s over %s), which sequence blocks allow for.",
			num(a.Lag1), plural(a.Pairs, "pair"))
	}
	return fmt.Sprintf("The training residuals are serially correlated (lag-1 autocorrelation %s over %s): blocks of at least %s reach past that dependence (|%s|^%d <= %s), so that a left-out interval is nearly independent of the data kept.",
		num(a.Lag1), plural(a.Pairs, "pair"), plural(a.SuggestedLength, "step"), num(a.Lag1), a.SuggestedLength, step(audit.DependenceLevel))
}

// mismatchText says what to change when the scheme in use does not fit.
func mismatchText(a *datacheck.SchemeAdvice) string {
	used := a.Used + " blocks"
	if a.UsedLength > 0 {
		used = fmt.Sprintf("%s blocks of %s", a.Used, plural(a.UsedLength, "step"))
	}
	if a.Used == a.Scheme || a.Used == a.Alternative {
		return fmt.Sprintf("This audit used %s: use --block-length %d or more.", used, a.SuggestedLength)
	}
	fix := "--blocks " + a.Scheme
	if a.SuggestedLength > 0 {
		fix += fmt.Sprintf(" --block-length %d", a.SuggestedLength)
	}
	return fmt.Sprintf("This audit used %s: use %s.", used, fix)
}

// schemeLine is the terminal's line on the block scheme: the advice when
// the scheme in use does not fit, else "".
func schemeLine(r *audit.Result) string {
	if r.Diag.Scheme == nil || r.Diag.Scheme.Fits {
		return ""
	}
	return schemeText(r)
}

// jsonScheme is the JSON form of datacheck.SchemeAdvice.
type jsonScheme struct {
	Sequences       int    `json:"sequences"`
	MedianLength    int    `json:"median_length"`
	MaxLength       int    `json:"max_length"`
	Lag1            fnum   `json:"lag1_autocorrelation"`
	Pairs           int    `json:"pairs"`
	Correlated      bool   `json:"correlated"`
	Used            string `json:"used"`
	UsedLength      int    `json:"used_length"`
	Scheme          string `json:"scheme"`
	Alternative     string `json:"alternative"`
	Shape           string `json:"shape"`
	SuggestedLength int    `json:"suggested_length"`
	Fits            bool   `json:"fits"`
	Text            string `json:"text"`
}

// jsonSchemeOf returns the JSON form of r's scheme advice, nil without.
func jsonSchemeOf(r *audit.Result) *jsonScheme {
	a := r.Diag.Scheme
	if a == nil {
		return nil
	}
	return &jsonScheme{Sequences: a.Sequences, MedianLength: a.MedianLength, MaxLength: a.MaxLength,
		Lag1: fnum(a.Lag1), Pairs: a.Pairs, Correlated: a.Correlated, Used: a.Used, UsedLength: a.UsedLength,
		Scheme: a.Scheme, Alternative: a.Alternative, Shape: string(a.Shape), SuggestedLength: a.SuggestedLength,
		Fits: a.Fits, Text: schemeText(r)}
}
