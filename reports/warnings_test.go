package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
)

// everyWarning is the fixture carrying every warning kind at once, two
// of the joined kinds (step coverage, high leverage) twice, a damping
// sensitivity above its bound and a fit check whose ridge disagrees with
// the given one, so that the fit warning is put first.
func everyWarning() *audit.Result {
	r := fixture()
	r.Diag.Warnings = []audit.Warning{
		{Code: audit.StepCoverage, Step: 2, Figure: 0.7, Bound: 0.8, Count: 500, Ratio: 1.5},
		{Code: audit.NotStationary, Step: -1, Figure: 0.3, Bound: 0.1},
		{Code: audit.NonPositiveTrace, Step: -1, Figure: -1},
		{Code: audit.Indefinite, Step: -1, Figure: -0.001, Bound: -0.0002, Count: 1},
		{Code: audit.SolverTolerance, Step: -1, Figure: 0.01, Bound: 1e-6, Count: 3},
		{Code: audit.HighLeverage, Step: 0, Figure: 0.6, Bound: 0.5},
		{Code: audit.StepCoverage, Step: 4, Figure: 0.6, Bound: 0.8, Count: 500, Ratio: 1.6},
		{Code: audit.FullRefitMoved, Step: -1, Figure: 0.5, Bound: 0.1},
		{Code: audit.PoorAgreement, Step: -1, Figure: 0.4, Bound: 0.8, Count: 2, Ratio: 0.3},
		{Code: audit.UnboundedBlocks, Step: -1, Figure: 0.9999999, Bound: 1e-6, Count: 1},
		{Code: audit.HighLeverage, Step: 1, Figure: 0.7, Bound: 0.5},
		{Code: audit.RefitNotConverged, Step: -1, Figure: 2, Bound: 10, Count: 1, Ratio: 50},
		{Code: audit.RefitNotRun, Step: -1, Figure: 2, Bound: 10, Count: 1},
		{Code: audit.FullRefitNotConverged, Step: -1, Figure: 0.1, Bound: 1e-6, Count: 50},
		{Code: audit.CoverageDrift, Step: -1, Figure: 0.6, Bound: 0.95, Ratio: 0.15, Count: 80},
		{Code: audit.SerialCorrelation, Step: -1, Figure: 0.5, Bound: 0.1, Count: 400},
		{Code: audit.TooWide, Step: -1, Figure: 13, Bound: audit.WideBound, Ratio: 1.8},
		{Code: audit.WiderThanCalibrated, Step: -1, Figure: 3, Bound: 2, Ratio: 1.1},
		{Code: audit.TargetAsInput, Step: -1, Count: 60},
	}
	r.Diag.UnboundedLabels = []string{"sequence 3 (id P003)"}
	r.Diag.DampingSensitivity = &audit.DampingSensitivity{Computed: true, Rho: 0.01, Width: 3.25,
		Low: audit.DampedFigures{Rho: 0.001, MeanLength: 6.5, Coverage: 0.95}, High: audit.DampedFigures{Rho: 0.1, MeanLength: 3, Coverage: 0.85}}
	r.Diag.Fit = &datacheck.FitCheck{Sequences: 12, RMSE: 1.2, Ridge: 1, GradNorm: 106, FittedRidge: 0.0024, FittedGradNorm: 8,
		Alternatives: []datacheck.Alternative{{Shift: 2, RMSE: 2.5}}}
	r.Verdict = audit.Judge(r)
	return r
}

// TestEveryWarningAtOnce renders a run carrying every warning kind and
// the fit warning: every warning line of the summary has its text (no
// bare "warning: "), the fit warning comes first and is not overwritten
// by a joined warning, each joined warning appears once, every kind has
// its own words (not the fallback), and the Markdown's warning list has
// no empty item.
func TestEveryWarningAtOnce(t *testing.T) {
	r := everyWarning()
	if !hasReason(r, audit.RidgeMismatch) || !hasReason(r, audit.DampingSensitive) {
		t.Fatalf("the fixture's verdict lacks the ridge or damping reason: %+v", r.Verdict.Reasons)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "warning:") {
			lines = append(lines, l)
			if strings.TrimSpace(strings.TrimPrefix(l, "warning:")) == "" {
				t.Errorf("a bare warning line in the summary:\n%s", b.String())
			}
		}
	}
	// 19 warnings: the two step-coverage and the two high-leverage ones
	// are joined (17), the not-stationary one is said by the fit text
	// (16), plus the fit warning and the damping sensitivity (18).
	if len(lines) != 18 {
		t.Errorf("%d warning lines, want 18:\n%s", len(lines), b.String())
	}
	if len(lines) > 0 && !strings.Contains(lines[0], "with a ridge of 0.0024 than with the 1 given") {
		t.Errorf("the first warning is not the fit warning: %q", lines[0])
	}
	if !strings.Contains(b.String(), "see the warnings") {
		t.Errorf("the verdict does not point at the warnings:\n%s", b.String())
	}
	for _, want := range []string{
		"Coverage at some steps is below 80%",
		"step 3: 70.0% of 500 values",
		"step 5: 60.0% of 500 values",
		"The training sequences' own leverage is high at some steps (mean step 1: 0.60, step 2: 0.70",
		"non-positive trace",
		"eigenvalue(s) below -lambda",
		"Conjugate gradients did not reach tolerance",
		"Re-training on all the data moves the parameters",
		"Influence agrees poorly with exact re-training",
		"almost interpolates 1 training block(s) (sequence 3 (id P003))",
		"exact re-fits did not converge",
		"exact re-fits were not run",
		"Re-training on all the data did not converge",
		"too wide to be informative. Influence steps",
		"prefer the calibrated intervals",
		"The intervals depend on the damping",
	} {
		if n := strings.Count(b.String(), want); n != 1 {
			t.Errorf("the summary says %q %d times, want once:\n%s", want, n, b.String())
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "(figure ") {
			t.Errorf("a warning without its own words: %q", l)
		}
	}
	ws := warnings(r)
	for i, w := range ws {
		if strings.TrimSpace(w) == "" {
			t.Errorf("warning %d of %d is empty", i, len(ws))
		}
	}
	var md bytes.Buffer
	if _, err := WriteMarkdown(&md, r, t.TempDir(), &Options{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(md.String(), "\n") {
		if t2 := strings.TrimSpace(l); t2 == "-" || t2 == "*" || t2 == "- " {
			t.Errorf("an empty item in the Markdown: %q", l)
		}
	}
}
