package audit

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// tutorialDir holds the tutorial workflow's fixtures (testdata/tutorial/make.py).
const tutorialDir = "testdata/tutorial"

// tutorialAudit audits model (fixed.onnx or dynamic.onnx) of
// testdata/tutorial on its windows.
func tutorialAudit(t *testing.T, model string, o Options) *Result {
	t.Helper()
	g, err := onnx.Load(filepath.Join(tutorialDir, model))
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(filepath.Join(tutorialDir, "train.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	test, err := blocks.ReadFile(filepath.Join(tutorialDir, "test.csv"), &blocks.Options{OptionalTargets: true})
	if err != nil {
		t.Fatal(err)
	}
	o.Layout = graph.BatchFirst
	res, err := Run(context.Background(), g, train, test, &o)
	if err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	return res
}

// TestFixedBatchExport: the tutorial's export, torch.onnx.export(model,
// x, path) with x of 16 windows of 24 steps, fixes the batch size at 16.
// The audit runs it in chunks of 16 (60 training windows: the fourth
// chunk padded with 4 copies; 21 test windows: the second with 11) and
// says so. Its forecasts are PyTorch's float64 forecasts of the same
// weights to 1e-10, and its audit is the audit of the same model exported
// with a dynamic batch axis: every limit equal to 1e-10, the same loss
// terms and coverage.
func TestFixedBatchExport(t *testing.T) {
	var ref struct {
		Windows   []string  `json:"windows"`
		Forecasts []float64 `json:"forecasts"`
	}
	b, err := os.ReadFile(filepath.Join(tutorialDir, "fixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	fixed := tutorialAudit(t, "fixed.onnx", Options{})
	dynamic := tutorialAudit(t, "dynamic.onnx", Options{})
	if !slices.ContainsFunc(fixed.Model.Assumed, func(n string) bool { return strings.Contains(n, "runs on chunks of 16 sequences") }) {
		t.Errorf("no note on the chunks: %q", fixed.Model.Assumed)
	}
	if slices.ContainsFunc(dynamic.Model.Assumed, func(n string) bool { return strings.Contains(n, "chunks") }) {
		t.Errorf("a note on chunks for the dynamic export: %q", dynamic.Model.Assumed)
	}
	if len(fixed.Sequences) != len(ref.Windows) || len(dynamic.Sequences) != len(ref.Windows) {
		t.Fatalf("%d and %d test windows, PyTorch %d", len(fixed.Sequences), len(dynamic.Sequences), len(ref.Windows))
	}
	if fixed.Setting.LossTerms != 60 || dynamic.Setting.LossTerms != 60 {
		t.Errorf("loss terms %d (fixed) and %d (dynamic), want 60: one per training window", fixed.Setting.LossTerms, dynamic.Setting.LossTerms)
	}
	for i, s := range fixed.Sequences {
		d := dynamic.Sequences[i]
		if s.ID != ref.Windows[i] || len(s.Steps) != 1 || len(d.Steps) != 1 {
			t.Fatalf("window %s (PyTorch %s): %d forecasts", s.ID, ref.Windows[i], len(s.Steps))
		}
		a, c := s.Steps[0], d.Steps[0]
		if a.Row != 23 || a.Target == nil {
			t.Errorf("window %s: forecast at row %d, target %v; want row 23 and its label", s.ID, a.Row, a.Target)
		}
		if math.Abs(a.Prediction-ref.Forecasts[i]) > 1e-10 {
			t.Errorf("window %s: forecast %.15g, PyTorch %.15g", s.ID, a.Prediction, ref.Forecasts[i])
		}
		for _, v := range [][2]float64{{a.Prediction, c.Prediction}, {a.Lower, c.Lower}, {a.Upper, c.Upper}} {
			if math.IsInf(v[0], 0) || math.Abs(v[0]-v[1]) > 1e-10 {
				t.Errorf("window %s: %.15g with the fixed batch, %.15g with the dynamic one", s.ID, v[0], v[1])
			}
		}
	}
	if fixed.Summary.Coverage != dynamic.Summary.Coverage || fixed.Summary.Points != 21 {
		t.Errorf("coverage %v of %d (fixed), %v of %d (dynamic)", fixed.Summary.Coverage, fixed.Summary.Points, dynamic.Summary.Coverage, dynamic.Summary.Points)
	}
	// Auditing the head's parameters only (graph.Restrict): the chunks
	// keep the restricted parameter table.
	fixed = tutorialAudit(t, "fixed.onnx", Options{Params: "head.*"})
	dynamic = tutorialAudit(t, "dynamic.onnx", Options{Params: "head.*"})
	if fixed.Model.Params != 9 || dynamic.Model.Params != 9 {
		t.Errorf("%d and %d parameters, want the head's 9", fixed.Model.Params, dynamic.Model.Params)
	}
	for i, s := range fixed.Sequences {
		a, c := s.Steps[0], dynamic.Sequences[i].Steps[0]
		if math.Abs(a.Lower-c.Lower) > 1e-10 || math.Abs(a.Upper-c.Upper) > 1e-10 {
			t.Errorf("head only, window %s: [%.15g, %.15g] with the fixed batch, [%.15g, %.15g] with the dynamic one", s.ID, a.Lower, a.Upper, c.Lower, c.Upper)
		}
	}
}

// TestFixedBatchTimeFirst: a time-first per-step GRU whose export fixes
// the batch at 4 (x [6 4 2], y [6 4 1]; testdata/tutorial/
// make_timefirst.py) runs in chunks along the second axis of its input
// and output: 30 training sequences (the eighth chunk padded with 2
// copies), 9 test sequences (the third with 3). Every prediction and
// limit equals the dynamic export's to 1e-10.
func TestFixedBatchTimeFirst(t *testing.T) {
	run := func(model string) *Result {
		g, err := onnx.Load(filepath.Join(tutorialDir, model))
		if err != nil {
			t.Fatal(err)
		}
		train, err := blocks.ReadFile(filepath.Join(tutorialDir, "tf_train.csv"), nil)
		if err != nil {
			t.Fatal(err)
		}
		test, err := blocks.ReadFile(filepath.Join(tutorialDir, "tf_test.csv"), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), g, train, test, &Options{Layout: graph.TimeFirst})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		return res
	}
	fixed, dynamic := run("tf_fixed.onnx"), run("tf_dynamic.onnx")
	if !slices.ContainsFunc(fixed.Model.Assumed, func(n string) bool { return strings.Contains(n, "runs on chunks of 4 sequences") }) {
		t.Errorf("no note on the chunks: %q", fixed.Model.Assumed)
	}
	n := 0
	for i, s := range fixed.Sequences {
		for k, a := range s.Steps {
			c := dynamic.Sequences[i].Steps[k]
			for _, v := range [][2]float64{{a.Prediction, c.Prediction}, {a.Lower, c.Lower}, {a.Upper, c.Upper}} {
				if math.IsInf(v[0], 0) || math.Abs(v[0]-v[1]) > 1e-10 {
					t.Errorf("sequence %s row %d: %.15g with the fixed batch, %.15g with the dynamic one", s.ID, a.Row, v[0], v[1])
				}
			}
			n++
		}
	}
	if n != 54 || fixed.Summary.Coverage != dynamic.Summary.Coverage {
		t.Errorf("%d forecasts (want 54), coverage %v and %v", n, fixed.Summary.Coverage, dynamic.Summary.Coverage)
	}
}
