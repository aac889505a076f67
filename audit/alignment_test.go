package audit

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// tutorialRun audits dynamic.onnx of testdata/tutorial on the training
// and test files given as text, read with shift.
func tutorialRun(t *testing.T, train, test string, shift int) (*Result, error) {
	t.Helper()
	g, err := onnx.Load(filepath.Join(tutorialDir, "dynamic.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := blocks.Read(strings.NewReader(train), "train.csv", &blocks.Options{Shift: shift})
	if err != nil {
		t.Fatal(err)
	}
	te, err := blocks.Read(strings.NewReader(test), "test.csv", &blocks.Options{Shift: shift, OptionalTargets: true})
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), g, tr, te, &Options{Layout: graph.BatchFirst})
}

func readText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tutorialDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// extraRows writes windows with one label on their last row in the
// layout that puts the target on an extra row after the window: a row
// whose feature and target are the label.
func extraRows(text string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		f := strings.Split(l, ",")
		if f[3] == "" || f[0] == "id" {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Join(f[:3], ",")+",", f[0]+",24,"+f[3]+","+f[3])
	}
	return strings.Join(out, "\n") + "\n"
}

// TestWrongShift: a many-to-one model forecasts from a window's last
// row; with shift 1 that row takes its target from a row that does not
// exist, so no training value can be matched to a forecast. The audit
// fails with one error naming the shift (and saying shift 0 would match
// the 60 labels), where it had no loss term to work with.
func TestWrongShift(t *testing.T) {
	_, err := tutorialRun(t, readText(t, "train.csv"), readText(t, "test.csv"), 1)
	var oe *OptionError
	if !errors.As(err, &oe) || len(oe.Options) != 1 || oe.Options[0] != blocks.OptShift {
		t.Fatalf("shift 1: %v; want an error naming the shift", err)
	}
	if !strings.Contains(err.Error(), "no target of train.csv can be matched to a forecast") || !strings.Contains(err.Error(), "with shift 0, 60 forecasts would have one") {
		t.Errorf("message: %v", err)
	}
}

// TestTargetOnExtraRow: windows of 24 input rows followed by a 25th row
// holding the target (also in the feature column) feed the target to the
// model as its 25th input. With the training windows so laid out too,
// the audit warns (on all 60 training windows) and the verdict is not
// good; with training windows laid out right, the test windows' forecasts
// fall at a row no training window labels, and the audit fails naming
// the shift instead of returning unbounded intervals.
func TestTargetOnExtraRow(t *testing.T) {
	res, err := tutorialRun(t, extraRows(readText(t, "train.csv")), readText(t, "extra.csv"), 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Diag.Warnings {
		if w.Code == TargetAsInput {
			found = w.Count == 60
		}
	}
	if !found || res.Verdict.Level == Good {
		t.Errorf("target on an extra row: warnings %+v, verdict %s", res.Diag.Warnings, res.Verdict.Level)
	}
	res, err = tutorialRun(t, readText(t, "train.csv"), readText(t, "test.csv"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Diag.Warnings {
		if w.Code == TargetAsInput {
			t.Errorf("the target on the window's last row: %+v", w)
		}
	}
	_, err = tutorialRun(t, readText(t, "train.csv"), readText(t, "extra.csv"), 0)
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Options[0] != blocks.OptShift || !strings.Contains(err.Error(), "every interval of test.csv would be unbounded") {
		t.Errorf("test windows with an extra row: %v", err)
	}
}

// TestNoBoundedIntervalIsPoor: a run without one bounded interval is
// poor, also when the test data have no labels to measure coverage on.
func TestNoBoundedIntervalIsPoor(t *testing.T) {
	inf := math.Inf(1)
	res := &Result{Sequences: []SequenceResult{{ID: "a", Steps: []StepResult{{Lower: -inf, Upper: inf}, {Lower: 0, Upper: inf}}}}}
	if v := Judge(res); v.Level != Poor {
		t.Errorf("no bounded interval, no labels: %s", v.Level)
	}
	res.Sequences[0].Steps[1].Upper = 1
	if v := Judge(res); v.Level == Poor {
		t.Errorf("one bounded interval, no labels: %s", v.Level)
	}
}

// TestExtraRowFixedSteps: a model whose export fixes 24 steps, given
// windows of 25 rows, is refused with the advice to put the target on the
// window's last row.
func TestExtraRowFixedSteps(t *testing.T) {
	g, err := onnx.Load(filepath.Join(tutorialDir, "fixed.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.Read(strings.NewReader(extraRows(readText(t, "train.csv"))), "train.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), g, train, nil, &Options{Layout: graph.BatchFirst})
	if !errors.Is(err, modelio.ErrFixedLength) || !strings.Contains(err.Error(), "every sequence of train.csv has one row more: if that row holds the window's target, put the target on the window's last row") {
		t.Errorf("windows of 25 rows for 24 steps: %v", err)
	}
}
