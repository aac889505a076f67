package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/classify"
)

// This file: a classifier's part of the Markdown and HTML reports (one
// view, classView, that both render) and of the CSV (CSVClassHeader).

// CSVClassHeader are the columns a classifier's CSV adds after every
// other: the probability of class 1, its interval (for K classes the K
// probabilities and their limits, separated by spaces), and the jackknife+
// and split-conformal prediction sets as class indices separated by
// spaces (empty for an empty set; split_set empty without a calibration
// set).
var CSVClassHeader = []string{"probability", "prob_lower", "prob_upper", "set", "split_set"}

// csvClass is the classifier's columns of one forecast.
func csvClass(c *classify.Forecast) []string {
	if c == nil {
		return []string{"", "", "", "", ""}
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	if c.Lowers != nil { // K classes: space-separated lists
		fs := func(x []float64) string {
			parts := make([]string, len(x))
			for i, v := range x {
				parts[i] = f(v)
			}
			return strings.Join(parts, " ")
		}
		return []string{fs(c.Probs), fs(c.Lowers), fs(c.Uppers), setText(c.Set), setText(c.Split)}
	}
	return []string{f(c.Probs[len(c.Probs)-1]), f(c.ProbLower), f(c.ProbUpper), setText(c.Set), setText(c.Split)}
}

func setText(s []int) string {
	parts := make([]string, len(s))
	for i, y := range s {
		parts[i] = strconv.Itoa(y)
	}
	return strings.Join(parts, " ")
}

// classView is what the reports show of a classifier: a lead, the table
// of the set kinds, coverage by set size and by true class, the scores
// of the probabilities and the risk flags.
type classView struct {
	Lead                string
	Recommend           string // the recommended kind of sets, and why
	Head                []string
	Rows                [][]string
	SizeHead, ClassHead []string
	SizeRows, ClassRows [][]string
	StepHead            []string
	StepRows            [][]string // coverage by step, jackknife+ and split
	Scores              []row
	FlagHead            []string
	FlagRows            [][]string
	Charts              []chartView // the reliability diagram (HTML)
}

func newClassView(r *audit.Result) *classView {
	s := r.Classification
	if s == nil || s.Labelled == 0 {
		return nil
	}
	pc := func(x float64) string {
		if math.IsNaN(x) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	v := &classView{
		Lead: fmt.Sprintf("Prediction sets of classes at %s nominal coverage (score %s) over %d labelled forecasts: jackknife+ sets from the leave-one-block-out models, and split conformal on the calibration set when one is given. A set of both classes says the model cannot tell; an empty set says no class is plausible. Every forecast also gets its probability with an interval from the leave-one-block-out models (how far the probability would move with other training data).",
			pc(1-s.Alpha), strings.ToUpper(string(s.Score)), s.Labelled),
		Head:      []string{"Sets", "Coverage", "Mean size", "Singletons", "Empty"},
		SizeHead:  []string{"Set size", "Forecasts", "Coverage"},
		ClassHead: []string{"True class", "Forecasts", "Coverage", "Mean set size"},
		FlagHead:  []string{"Flag", "Flagged", "Precision", "Recall"},
	}
	kinds := []struct {
		name string
		f    *classify.SetFigures
	}{{"jackknife+", &s.Jackknife}, {"split conformal", s.Split}}
	for _, k := range kinds {
		if k.f == nil {
			continue
		}
		v.Rows = append(v.Rows, []string{k.name, pc(k.f.Coverage), num(k.f.MeanSize), pc(k.f.Singleton), pc(k.f.Empty)})
	}
	v.Recommend = setRecommendation(s, pc)
	for _, c := range s.Jackknife.BySize {
		if c.N > 0 {
			v.SizeRows = append(v.SizeRows, []string{strconv.Itoa(c.Key), strconv.Itoa(c.N), pc(c.Coverage)})
		}
	}
	v.StepHead = []string{"Step", "Forecasts", "Jackknife+ coverage", "Mean set size"}
	if s.Split != nil {
		v.StepHead = append(v.StepHead, "Split conformal coverage", "Mean set size")
	}
	for i, c := range s.Jackknife.ByStep {
		if c.N == 0 {
			continue
		}
		row := []string{strconv.Itoa(c.Key + 1), strconv.Itoa(c.N), pc(c.Coverage), num(c.MeanSize)}
		if s.Split != nil && i < len(s.Split.ByStep) {
			row = append(row, pc(s.Split.ByStep[i].Coverage), num(s.Split.ByStep[i].MeanSize))
		}
		v.StepRows = append(v.StepRows, row)
	}
	for _, c := range s.Jackknife.ByClass {
		if c.N > 0 {
			v.ClassRows = append(v.ClassRows, []string{strconv.Itoa(c.Key), strconv.Itoa(c.N), pc(c.Coverage), num(c.MeanSize)})
		}
	}
	v.Scores = []row{{"Brier score", num(s.Brier)}, {"Log loss", num(s.LogLoss)}, {"Expected calibration error", num(s.ECE)},
		{"AUROC", num(s.AUROC)}, {"Mean width of the probability intervals", num(s.ProbWidth)}}
	for _, f := range []*classify.Flag{s.FlagAbove, s.FlagBelow} {
		if f == nil {
			continue
		}
		name := fmt.Sprintf("probability's lower limit above %s", num(f.Threshold))
		if !f.Above {
			name = fmt.Sprintf("probability's upper limit below %s", num(f.Threshold))
		}
		v.FlagRows = append(v.FlagRows, []string{name, strconv.Itoa(f.Flagged), pc(f.Precision), pc(f.Recall)})
	}
	return v
}

// writeClassMarkdown writes the classifier's section (nothing for
// regression).
func writeClassMarkdown(md *mdWriter, r *audit.Result) {
	v := newClassView(r)
	if v == nil {
		return
	}
	fmt.Fprintf(md.b, "## Classifier: prediction sets and probabilities\n\n%s\n\n", mdEscape(v.Lead))
	md.table(v.Head, "lrrrr", v.Rows)
	if v.Recommend != "" {
		fmt.Fprintf(md.b, "%s\n\n", mdEscape(v.Recommend))
	}
	fmt.Fprintf(md.b, "### Jackknife+ sets by size and by true class\n\n")
	md.table(v.SizeHead, "lrr", v.SizeRows)
	md.table(v.ClassHead, "lrrr", v.ClassRows)
	if len(v.StepRows) > 0 {
		fmt.Fprintf(md.b, "### Sets by step\n\n")
		md.table(v.StepHead, "l"+strings.Repeat("r", len(v.StepHead)-1), v.StepRows)
	}
	fmt.Fprintf(md.b, "### Probabilities\n\n")
	md.kv("Score", v.Scores)
	if len(v.FlagRows) > 0 {
		fmt.Fprintf(md.b, "### Risk flags on the probability\n\n")
		md.table(v.FlagHead, "lrrr", v.FlagRows)
	}
}

// setRecommendation puts the recommended kind of sets into words (""
// without one).
func setRecommendation(s *classify.Summary, pc func(float64) string) string {
	r := s.Recommended
	if r == nil || r.Kind == "" {
		return ""
	}
	sizes := fmt.Sprintf("%s labels per set against %s for split conformal", num(r.JackknifeSize), num(r.SplitSize))
	switch {
	case r.Kind == "jackknife+":
		return fmt.Sprintf("Recommended for new forecasts: the jackknife+ sets. They cover %s of the calibration labels, which holds the %s target by the rule that chooses among intervals, and are no larger (%s).", pc(r.CalCoverage), pc(1-s.Alpha), sizes)
	case math.IsNaN(r.CalCoverage):
		return fmt.Sprintf("Recommended for new forecasts: the split-conformal sets, whose coverage is guaranteed; the jackknife+ sets of score %s are not measured on the calibration labels.", strings.ToUpper(string(s.Score)))
	case !r.Holds:
		return fmt.Sprintf("Recommended for new forecasts: the split-conformal sets, whose coverage is guaranteed; the jackknife+ sets cover %s of the calibration labels, which does not hold the %s target by the rule that chooses among intervals (overall and step by step).", pc(r.CalCoverage), pc(1-s.Alpha))
	}
	return fmt.Sprintf("Recommended for new forecasts: the split-conformal sets, whose coverage is guaranteed: the jackknife+ sets cover %s of the calibration labels but are larger (%s).", pc(r.CalCoverage), sizes)
}
