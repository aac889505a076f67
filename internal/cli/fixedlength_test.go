package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Python loop over nn.LSTMCell traced for 12 steps (the zoo's
// traced_lstmcell12) runs only on sequences of 12 steps: inspect says so
// without advising dynamic axes alone, the audit accepts data whose every
// sequence has 12 steps (TestZooAudit) and refuses, naming the sequences,
// data whose lengths differ.
func TestFixedLengthExport(t *testing.T) {
	model := filepath.Join(zooDir, "traced_lstmcell12_op13.onnx")
	code, out, errs := runCmd("inspect", "--model", model)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		`Warning: the export fixes the number of steps (12) of input "x": the model runs only on sequences of exactly 12 steps, and the audit takes it when every sequence has 12.`,
		"unrolled for 12 steps and dynamic axes do not undo that",
		"Trial run: 2 sequences of 12 steps",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	b, err := os.ReadFile(filepath.Join(zooDir, "train.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		// Sequence s03 loses its last two rows, s07 its last one.
		if strings.HasPrefix(line, "s03,10,") || strings.HasPrefix(line, "s03,11,") || strings.HasPrefix(line, "s07,11,") {
			continue
		}
		kept = append(kept, line)
	}
	short := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(short, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCmd("--model", model, "--data", short, "--features", "x1,x2", "--quiet")
	if code != 1 {
		t.Fatalf("audit of sequences of 10, 11 and 12 steps: exit %d, want 1: %s", code, errs)
	}
	oneMessage(t, []string{"--data", short}, errs, 1)
	for _, want := range []string{
		"runs only on sequences of exactly 12 steps",
		`2 of the 40 sequences of ` + short + ` have other lengths ("s03" has 10, "s07" has 11)`,
		"torch.jit.script",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q: %s", want, errs)
		}
	}
	if strings.Contains(errs, "was exported with a fixed batch size") {
		t.Errorf("the error advises dynamic axes alone, which does not help a traced loop: %s", errs)
	}
}

// TestFixedShapeDataError: a problem with the data (here a calibration
// sequence that repeats a training sequence under another id) is
// reported as the data's, without the advice to export with dynamic
// axes, which would not help, though the model's time axis is fixed.
func TestFixedShapeDataError(t *testing.T) {
	model := filepath.Join(zooDir, "traced_lstmcell12_op13.onnx")
	b, err := os.ReadFile(filepath.Join(zooDir, "train.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cal := []string{"id,t,x1,x2,y\n"}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(line, "s05,") {
			cal = append(cal, "c05,"+strings.TrimPrefix(line, "s05,"))
		}
	}
	calFile := filepath.Join(dir, "cal.csv")
	if err := os.WriteFile(calFile, []byte(strings.Join(cal, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(zooDir, "train.csv")
	code, _, errs := runCmd("--model", model, "--data", train, "--test", train, "--calibration", calFile, "--features", "x1,x2", "--quiet")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	if !strings.Contains(errs, `calibration sequence "c05" has the same steps and features as training sequence "s05"`) {
		t.Errorf("the error does not name the repeated sequence: %s", errs)
	}
	if strings.Contains(errs, "was exported with a fixed batch size") {
		t.Errorf("a data error carries the advice about dynamic axes: %s", errs)
	}
}
