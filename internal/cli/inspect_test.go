package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
)

// An export without dynamic axes (testdata/make_fixed.py) gets a warning
// that names the fixed sizes and gives the export call with dynamic axes;
// the trial run says what it ran. An export with dynamic axes gets none.
func TestInspectFixedShape(t *testing.T) {
	code, out, errs := runCmd("inspect", "--model", filepath.Join("testdata", "fixed_shape.onnx"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Warning: the export fixes the batch size (1) and the number of steps (10) of input \"x\"",
		`dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}})`,
		"Trial run: 1 sequence of 10 steps gives y [1 10 1]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := runCmd("inspect", "--model", exModel); strings.Contains(out, "Warning") {
		t.Errorf("a model with dynamic axes gets a warning:\n%s", out)
	}
	if want := "the audit runs the model on one sequence at a time, on sequences of exactly 10 steps. For one pass per batch, export it again"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	// The audit runs it one sequence at a time (audit/modelio's chunks),
	// and says so.
	model := filepath.Join("testdata", "fixed_shape.onnx")
	code, out, errs = runCmd("--model", model, "--data", exTrain)
	if want := "note: The export fixes the batch size at 1 (input \"x\" is declared [1 10 1]): the model runs on one sequence at a time"; code != 0 || !strings.Contains(out+errs, want) {
		t.Errorf("audit of a fixed-shape model: exit %d, output %q %q, want %q", code, out, errs, want)
	}
	g, err := onnx.Load(filepath.Join(fixtures, "gru_2l_tf.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if w := fixedShapeWarning(g, onnx.TimeFirst); w != "" {
		t.Errorf("time-first model with dynamic axes: %q", w)
	}
}
