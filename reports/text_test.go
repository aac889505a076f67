package reports

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
)

func TestNumberFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want string
	}{
		{pct(0.8934), "89.3%"}, {pct(1), "100.0%"}, {pct(math.NaN()), "n/a"},
		{pct0(0.9), "90%"}, {pct0(0.925), "92.5%"}, {pct0(0.8), "80%"},
		{num(2.101157418768314), "2.101"}, {num(0.0057021), "0.005702"}, {num(1234.5678), "1235"},
		{num(-3), "-3"}, {num(0), "0"}, {num(1.5e-7), "1.500e-07"}, {num(2.5e9), "2.500e+09"},
		{num(math.Inf(1)), "+∞"}, {num(math.Inf(-1)), "−∞"}, {num(math.NaN()), "n/a"},
		{count(0), "0"}, {count(999), "999"}, {count(10000), "10,000"}, {count(1234567), "1,234,567"}, {count(-2500), "-2,500"},
		{plural(1, "value"), "1 value"}, {plural(10000, "value"), "10,000 values"},
		{seconds(0.004), "4.0 ms"}, {seconds(1.5), "1.50 s"}, {seconds(125), "2m 05s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		min, max float64
		format   func(float64) string
		want     string
	}{
		{0.55, 1, percent, "60% 70% 80% 90% 100%"},
		{0, 2.6, num, "0 0.5 1 1.5 2 2.5"},
		{0.5, 10.5, integer, "2 4 6 8 10"},
		{0.5, 3.5, integer, "1 2 3"},
		{-4.2, 13.1, num, "0 5 10"},
	} {
		var labels []string
		for _, tk := range niceTicks(tc.format).Ticks(tc.min, tc.max) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tc.want && !(tc.min == -4.2 && got == "-4 -2 0 2 4 6 8 10 12") {
			t.Errorf("ticks on [%g, %g]: %s, want %s", tc.min, tc.max, got, tc.want)
		}
	}
	var _ plot.Ticker = niceTicks(num)
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		coverage float64
		points   int
		want     string
	}{
		{0.90, 10000, "good"}, {0.95, 10000, "good"}, {0.885, 10000, "fair"}, {0.80, 10000, "fair"}, {0.70, 10000, "poor"},
		{0.88, 200, "good"}, // within two standard errors of 90% on 200 points
	} {
		r := fixture()
		r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite, r.Diag.Warnings = tc.coverage, tc.points, 0, nil
		if got, text := verdict(judged(r)); got != tc.want {
			t.Errorf("coverage %g of %d: %s (%s), want %s", tc.coverage, tc.points, got, text, tc.want)
		}
	}
}

func TestWriteSummary(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	want := `90% intervals covered 87.5% of 16 test values; no value was flagged ‘below 4’; flagged ‘above 10’ with 75.0% precision.
Coverage is at the 90% target (within sampling error, ±15.0 points). But 12.5% of the intervals are unbounded. Read the warnings before relying on the intervals.
Mean interval width 3.25 (in-sample residual intervals: 2.5, covering 75.0%); RMSE of the predictions 1.235; every step covered in 33.3% of sequences. 2 intervals are unbounded: too few leave-one-out residuals for this alpha (a forecast needs at least 9 at alpha 0.1, ⌈1/α⌉ − 1): pool them across rows (--blocks interval --block-length K, which pools when the training sequences are few, or --pool rows), add training sequences, raise --alpha, or add a calibration set (--calibration).
warning: The Hessian has 1 eigenvalue(s) below -lambda (smallest -0.001, lambda 0.0002): the damped matrix is indefinite, so the influence step is not a descent step in those directions and intervals can blow up; use the Gauss-Newton curvature or more damping.
`
	if b.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestStepCoverageText: the step-coverage warnings become one paragraph
// naming each step with its coverage, and the memorisation sentence only
// when every named step's test/train error ratio is at least 1.2.
func TestStepCoverageText(t *testing.T) {
	w := func(step int, cov, ratio float64) audit.Warning {
		return audit.Warning{Code: audit.StepCoverage, Step: step, Figure: cov, Bound: 0.8, Count: 1000, Ratio: ratio}
	}
	got := stepCoverageText([]audit.Warning{w(0, 0.7, 1.5), w(9, 0.75, 1.3)})
	for _, s := range []string{"below 80%, the level the jackknife+ guarantees when every leave-one-out model is re-trained exactly", "step 1: 70.0% of 1000 values, sampling tolerance ±2.5 points; step 10: 75.0% of 1000 values, sampling tolerance ±2.5 points", "1.3 to 1.5 times larger"} {
		if !strings.Contains(got, s) {
			t.Errorf("missing %q in %q", s, got)
		}
	}
	if got := stepCoverageText([]audit.Warning{w(0, 0.7, 1.5), w(1, 0.7, 1.1)}); strings.Contains(got, "times larger") {
		t.Errorf("memorisation sentence with one step's ratio 1.1: %q", got)
	}
}

// judged is r with its verdict formed again, after a test changed it.
func judged(r *audit.Result) *audit.Result {
	r.Verdict = audit.Judge(r)
	return r
}

// TestVerdictReadsWidth: coverage at the target with intervals many times
// wider than the in-sample ones is not "good"; a model that fits its
// training data better under another column mapping is poor, and the
// verdict names the mapping; a model merely far from a stationary point
// (mini-batch training) is not judged by that, and the report says so
// once, in the notes.
func TestVerdictReadsWidth(t *testing.T) {
	r := fixture()
	r.Summary.Coverage, r.Summary.Points, r.Summary.Infinite, r.Diag.Warnings = 0.9, 10000, 0, nil
	if level, _ := verdict(judged(r)); level != "good" {
		t.Fatalf("fixture at the target gives %s", level)
	}
	r.Diag.Warnings = append(r.Diag.Warnings, audit.Warning{Code: audit.TooWide, Step: -1, Figure: 13, Bound: audit.WideBound, Ratio: 1.8})
	level, text := verdict(judged(r))
	if level != "fair" || !strings.Contains(text, "13.0 times as wide as the in-sample residual intervals") {
		t.Errorf("too-wide intervals: %s, %q", level, text)
	}
	r.Diag.Warnings = nil
	r.Diag.Stationarity = 110
	r.Diag.Fit = &datacheck.FitCheck{Sequences: 200, RMSE: 0.52, Ridge: 0.38, GradNorm: 3, FittedRidge: 0.4, FittedGradNorm: 2.9,
		Alternatives: []datacheck.Alternative{{Features: []string{"b", "a"}, Shift: 1, RMSE: 6.4}, {Shift: 0, RMSE: 1.19}}}
	level, text = verdict(judged(r))
	if level != "good" || strings.Contains(text, "stationary") {
		t.Errorf("ordinary mini-batch model: %s, %q", level, text)
	}
	var stat []string
	for _, s := range append(notes(r), warnings(r)...) {
		if strings.Contains(s, "stationary point") {
			stat = append(stat, s)
		}
	}
	if len(stat) != 1 || !strings.Contains(stat[0], "training RMSE 0.52 with the columns as given") || !strings.Contains(stat[0], "6.4 with --features b,a --shift 1") {
		t.Errorf("stationarity said %d times: %q", len(stat), stat)
	}
	r.Diag.Fit.RMSE, r.Diag.Fit.Alternatives[0].RMSE = 6.4, 0.52
	level, text = verdict(judged(r))
	if level != "poor" || !strings.Contains(text, "far better with --features b,a --shift 1 (training RMSE 0.52 against 6.4 as given)") {
		t.Errorf("swapped features: %s, %q", level, text)
	}
	if ws := warnings(r); len(ws) == 0 || !strings.Contains(ws[0], "Rerun with those flags") {
		t.Errorf("swapped features: warnings %q", ws)
	}
}

// TestVerdictReadsUnbounded: intervals that are mostly unbounded cover
// everything and are poor; a tenth of them unbounded is at most fair.
func TestVerdictReadsUnbounded(t *testing.T) {
	r := fixture()
	r.Summary.Coverage, r.Summary.Points, r.Diag.Warnings = 1, 10000, nil
	r.Summary.Infinite = 6558
	if level, text := verdict(judged(r)); level != "poor" || !strings.Contains(text, "65.6% of the intervals are unbounded") {
		t.Errorf("two thirds unbounded: %s, %q", level, text)
	}
	r.Summary.Infinite = 1000
	if level, _ := verdict(judged(r)); level != "fair" {
		t.Errorf("a tenth unbounded: %s", level)
	}
	r.Summary.Infinite = 10
	if level, _ := verdict(judged(r)); level != "good" {
		t.Errorf("0.1%% unbounded: %s", level)
	}
}

// TestSkippedSensitivityText: a damping check that was not run says what
// that means (the intervals stand; the dependence on the damping is not
// known) and names the two runs that would tell, at rho x10 and /10.
func TestSkippedSensitivityText(t *testing.T) {
	ds := &audit.DampingSensitivity{Rho: 0.001, Reason: "not computed on the lowrank path"}
	got := sensitivityText(ds)
	for _, want := range []string{"not computed on the lowrank path.", "not known", "--damping 0.01 ", "--damping 0.0001"} {
		if !strings.Contains(got, want) {
			t.Errorf("sensitivityText = %q, want it to contain %q", got, want)
		}
	}
	ds = &audit.DampingSensitivity{Reason: "not computed: no damping"}
	if got := sensitivityText(ds); got != "not computed: no damping" {
		t.Errorf("without damping: %q", got)
	}
}

// TestSolverTextPrediction: a solver the cost model chose is named with
// why and the prediction it was chosen from; without a prediction the
// size rule's words stand alone.
func TestSolverTextPrediction(t *testing.T) {
	st := audit.Setting{Solver: "lowrank", SolverReason: string(audit.ReasonPredicted), LossTerms: 1824,
		SolverPrediction: "predicted time (memory): exact 58 min (382 MB), dual 7 min (111 MB), lowrank 4 min (58 MB); lowrank chosen"}
	got := SolverText(st, 3991)
	want := "lowrank (predicted much faster than the others for 3,991 parameters and 1,824 loss terms); predicted time (memory): exact 58 min (382 MB), dual 7 min (111 MB), lowrank 4 min (58 MB); lowrank chosen"
	if got != want {
		t.Errorf("SolverText =\n%q, want\n%q", got, want)
	}
	st = audit.Setting{Solver: "exact", SolverReason: string(audit.ReasonSmallModel)}
	if got := SolverText(st, 97); got != "exact (dense: 97 parameters, at most 3,000)" {
		t.Errorf("without a prediction: %q", got)
	}
}
