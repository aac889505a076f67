package reports

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
)

// renderWords is the Markdown and the terminal summary of r, for checking
// their words.
func renderWords(t *testing.T, r *audit.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if _, err := WriteMarkdown(&md, r, t.TempDir(), &Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n" + md.String()
}

// TestUnderCoveringWords: a run whose pooled coverage is below 1 - 2
// alpha and whose step 10 is at 79.1% of 1,000 values: no sentence says
// the coverage is at its target or "not below" the guarantee, the
// guarantee is stated with its condition (exact re-training), the step is
// named with its sampling tolerance, and the verdict box is not green
// above the warnings.
func TestUnderCoveringWords(t *testing.T) {
	r := fixture()
	r.Diag.Warnings = nil
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite = 0.74, 10000, 0
	r.Summary.CoveragePerStep = []float64{0.80, 0.78, 0.76, 0.74, 0.70, math.NaN()}
	r.Summary.PointsPerStep = []int{2000, 2000, 2000, 2000, 2000, 0}
	r.Diag.Warnings = []audit.Warning{{Code: audit.StepCoverage, Step: 4, Figure: 0.70, Bound: 0.8, Count: 2000, Ratio: 1.5}}
	r.Verdict = audit.Judge(r)
	if r.Verdict.Level != audit.Poor {
		t.Errorf("level %s, want poor", r.Verdict.Level)
	}
	got := renderWords(t, r)
	for _, bad := range []string{"at the 90% target", "not below", "safe side", "guaranteed at least"} {
		if strings.Contains(got, bad) {
			t.Errorf("an under-covering run's report says %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{
		"Coverage is below the 80% that the jackknife+ guarantees when every leave-one-out model is re-trained exactly (here they are estimated)",
		"step 5: 70.0% of 2000 values, sampling tolerance ±1.8 points",
		"❌",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}

	// Step 10 at 79.1% of 1,000 values is within its sampling tolerance
	// of 80% (±2.5 points): the audit raises no step warning, and the
	// pooled verdict at 88.6% of 10,000 is "somewhat too narrow", never
	// "not below the guarantee".
	r = fixture()
	r.Diag.Warnings = nil
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite = 0.886, 10000, 0
	r.Summary.CoveragePerStep = []float64{0.95, 0.9, 0.88, 0.85, 0.791, math.NaN()}
	r.Summary.PointsPerStep = []int{1000, 1000, 1000, 1000, 1000, 0}
	r.Verdict = audit.Judge(r)
	got = renderWords(t, r)
	for _, want := range []string{
		"Coverage is below the 90% target but above the 80% that the jackknife+ guarantees when every leave-one-out model is re-trained exactly (here they are estimated)",
		"Step 5 is below 80% but within sampling error of it (lowest 79.1%, tolerance ±2.5 points).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("88.6%% with a step at 79.1%%: lacks %q:\n%s", want, got)
		}
	}
	if r.Verdict.Level != audit.Fair || strings.Contains(got, "not below") {
		t.Errorf("88.6%%: level %s:\n%s", r.Verdict.Level, got)
	}
}

// TestWarningsNotGreen: a run at its coverage target with a warning gets
// a fair verdict that points at the warnings, never a green one above
// "read before relying on the intervals".
func TestWarningsNotGreen(t *testing.T) {
	r := fixture()
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite = 0.9, 10000, 0
	r.Verdict = audit.Judge(r)
	got := renderWords(t, r)
	if r.Verdict.Level != audit.Fair || strings.Contains(got, "✅") || !strings.Contains(got, "Read the warnings before relying on the intervals") {
		t.Errorf("a warning under a green verdict (%s):\n%s", r.Verdict.Level, got)
	}
}

// TestLongTestWords: test sequences longer than every training sequence
// (trained on 4 rows, tested on 6): the unbounded intervals at rows 5
// and 6 are blamed on the missing training residuals, not on alpha, and
// are left out of the pooled coverage and the verdict.
func TestLongTestWords(t *testing.T) {
	r := fixture()
	r.Diag.Warnings = nil
	inf := math.Inf(1)
	for i := range r.Sequences {
		for k := 4; k < 6; k++ {
			st := &r.Sequences[i].Steps[k]
			st.Lower, st.Upper, st.M = -inf, inf, 0
			st.Target = ptr(st.Prediction)
		}
	}
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite = 0.9, 10000, 0
	r.Summary.Beyond = &audit.Beyond{FromRow: 4, TrainRows: 4, Forecasts: 6, Labelled: 6}
	r.Verdict = audit.Judge(r)
	got := renderWords(t, r)
	if r.Verdict.Level != audit.Good {
		t.Errorf("level %s: the beyond-training intervals entered the verdict", r.Verdict.Level)
	}
	for _, want := range []string{
		"6 test values at steps past every training sequence (from step 5; the longest training sequence has 4 rows) have no leave-one-out residual",
		"6 intervals are at steps from 5 on, where no training sequence has a target (the longest has 4 rows), unbounded for that reason: not counted above",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "too few leave-one-out residuals for this alpha") {
		t.Errorf("the missing training steps are blamed on alpha:\n%s", got)
	}
}

// TestUnlabelledRowWords: test values at a row inside the training
// sequences' length that no training sequence labels (empty target
// cells) are blamed on the missing labels there, not on the training
// sequences' length.
func TestUnlabelledRowWords(t *testing.T) {
	r := fixture()
	r.Diag.Warnings = nil
	inf := math.Inf(1)
	for i := range r.Sequences {
		st := &r.Sequences[i].Steps[2]
		st.Lower, st.Upper, st.M = -inf, inf, 0
		st.Target = ptr(st.Prediction)
	}
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite = 0.9, 10000, 0
	r.Summary.Beyond = &audit.Beyond{FromRow: 2, TrainRows: 6, Forecasts: 3, Labelled: 3, Inside: true}
	r.Verdict = audit.Judge(r)
	got := renderWords(t, r)
	for _, want := range []string{
		"3 test values at steps where no training sequence has a label (the first at step 3) have no leave-one-out residual",
		"3 intervals are at steps where no training sequence has a target (the first at step 3), unbounded for that reason: not counted above",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "past every training sequence") {
		t.Errorf("unlabelled rows blamed on the training sequences' length:\n%s", got)
	}
}

// TestStationarityOneStory: a mini-batch model far from a stationary
// point (ratio 110, columns that check out): the JSON's warning, the
// terminal summary and the verdict tell one story. The ratio is what a
// mini-batch optimiser leaves; it lowers nothing (the verdict stays
// good) and nobody is told to train longer.
func TestStationarityOneStory(t *testing.T) {
	r := fixture()
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite = 0.9, 10000, 0
	r.Diag.Stationarity = 110
	r.Diag.Warnings = []audit.Warning{{Code: audit.NotStationary, Step: -1, Figure: 110, Bound: audit.StationarityBound}}
	r.Diag.Fit = &datacheck.FitCheck{Sequences: 200, RMSE: 0.52, Ridge: 0.38, GradNorm: 3, FittedRidge: 0.4, FittedGradNorm: 2.9,
		Alternatives: []datacheck.Alternative{{Shift: 1, RMSE: 6.4}}}
	r.Verdict = audit.Judge(r)
	if r.Verdict.Level != audit.Good {
		t.Errorf("verdict %s: the ratio alone lowered it", r.Verdict.Level)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r, &Options{}); err != nil {
		t.Fatal(err)
	}
	words := renderWords(t, r)
	for what, text := range map[string]string{"JSON": js.String(), "summary": words} {
		if !strings.Contains(text, "as a mini-batch optimiser such as Adam leaves it") || strings.Contains(text, "train longer") {
			t.Errorf("%s: the stationarity story differs:\n%s", what, text)
		}
	}
	if !strings.Contains(js.String(), "On its own this is no mistake and does not lower the verdict") {
		t.Errorf("JSON warning:\n%s", js.String())
	}
}
