package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The models of audit/modelio/testdata (made by its make.py).
const modelioDir = "../../audit/modelio/testdata"

func modelioArgs(name string, extra ...string) []string {
	return append([]string{"--model", filepath.Join(modelioDir, name+".onnx"),
		"--data", filepath.Join(modelioDir, name+"_train.csv"), "--test", filepath.Join(modelioDir, name+"_test.csv")}, extra...)
}

// TestSeveralInputsCmd: --input fills a second integer input, the summary
// says what fills every input, and without it the message names the
// input and the flag.
func TestSeveralInputsCmd(t *testing.T) {
	code, out, errs := runCmd(modelioArgs("embed_input", "--input", "x_cat=store,dow")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "Features, in the order the model takes them: x1, x2 (every column but id, t, y and those of the other inputs, in file order; choose others or another order with --features). Other inputs: x_cat ← store, dow (--input)."; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	code, out, errs = runCmd(modelioArgs("embed_input", "--input", "x_cat=store,dow", "--features", "x2,x1")...)
	if want := "Features, in the order the model takes them: x2, x1 (as given by --features). Other inputs: x_cat ← store, dow (--input)."; code != 0 || !strings.Contains(out, want) {
		t.Errorf("--features with --input: exit %d, stderr %s, output lacks %q:\n%s", code, errs, want, out)
	}
	code, _, errs = runCmd(modelioArgs("embed_input")...)
	if code != 1 || !strings.Contains(errs, "as x_cat=COLUMN,...") || !strings.Contains(errs, "(--input)") || strings.Contains(errs, "features, the file has") {
		t.Errorf("without --input: exit %d, stderr %s", code, errs)
	}
	code, _, errs = runCmd(modelioArgs("embed_input", "--input", "x_cat")...)
	if code != 2 || !strings.Contains(errs, "such as --input x_cat=store,dow") {
		t.Errorf("--input without columns: exit %d, stderr %s", code, errs)
	}
	// inspect lists every input with what fills it.
	code, out, errs = runCmd("inspect", "--model", filepath.Join(modelioDir, "embed_input.onnx"), "--input", "x_cat=store,dow")
	if code != 0 || !strings.Contains(out, "columns store, dow (--input)") || !strings.Contains(out, "the feature columns") || !strings.Contains(out, "Trial run: 2 sequences of 5 steps give y [2 5 1]") {
		t.Errorf("inspect: exit %d, stderr %s:\n%s", code, errs, out)
	}
	code, out, _ = runCmd("inspect", "--model", filepath.Join(modelioDir, "embed_named.onnx"))
	if code != 0 || !strings.Contains(out, `the column named "store"`) {
		t.Errorf("inspect embed_named: exit %d:\n%s", code, out)
	}
}

// TestOutputsCmd: a second output is not audited and said so, first, with
// how each output fits the training targets; a last axis
// of two values is audited as horizons only with a stated assumption, in
// the summary and the report; --output y:0 audits the mean.
func TestOutputsCmd(t *testing.T) {
	code, out, errs := runCmd(modelioArgs("gauss_two")...)
	if first, _, _ := strings.Cut(out, "\n"); code != 0 || !strings.HasPrefix(first, "Forecast output: y, chosen among the model's 2 outputs as the one that fits the training targets best (training RMSE ") ||
		!strings.Contains(first, "not audited: logvar (training RMSE ") {
		t.Errorf("gauss_two: exit %d, stderr %s:\n%s", code, errs, out)
	}
	md := filepath.Join(t.TempDir(), "r.md")
	code, out, errs = runCmd(modelioArgs("gauss_cat", "--out", md)...)
	if code != 0 {
		t.Fatalf("gauss_cat: exit %d: %s", code, errs)
	}
	const assumed = `Assumed: the last axis of output "y" (2 values) holds 2 forecast horizons`
	if !strings.Contains(out, "note: "+assumed) || !strings.Contains(out, "--output y:0") {
		t.Errorf("the summary does not state the assumption:\n%s", out)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "holds 2 forecast horizons, value h of row t forecasting the target of row t+h") {
		t.Errorf("the report does not state the assumption")
	}
	code, out, errs = runCmd(modelioArgs("gauss_cat", "--output", "y:0")...)
	if code != 0 || strings.Contains(out, "Assumed") || strings.Contains(out, "horizon") {
		t.Errorf("--output y:0: exit %d, stderr %s:\n%s", code, errs, out)
	}
	code, out, errs = runCmd(modelioArgs("gauss_cat", "--horizons", "2")...)
	if code != 0 || strings.Contains(out, "Assumed") {
		t.Errorf("--horizons 2: exit %d, stderr %s:\n%s", code, errs, out)
	}
	code, _, errs = runCmd(modelioArgs("gauss_two", "--output", "mu")...)
	if code != 1 || !strings.Contains(errs, `no output "mu": its outputs are "y", "logvar"`) {
		t.Errorf("--output mu: exit %d, stderr %s", code, errs)
	}
	code, out, _ = runCmd("inspect", "--model", filepath.Join(modelioDir, "gauss_two.onnx"))
	if code != 0 || !strings.Contains(out, "a candidate forecast (described with --output logvar)") || !strings.Contains(out, "audits the one that fits the targets best") {
		t.Errorf("inspect gauss_two: exit %d:\n%s", code, out)
	}
	code, out, _ = runCmd("inspect", "--model", filepath.Join(modelioDir, "gauss_two.onnx"), "--output", "y")
	if code != 0 || !strings.Contains(out, "not audited (choose it with --output logvar)") {
		t.Errorf("inspect gauss_two --output y: exit %d:\n%s", code, out)
	}
}

// TestInspectConstants: inspect says which initializers are parameters
// and which are constants, and why.
func TestInspectConstants(t *testing.T) {
	code, out, errs := runCmd("inspect", "--model", filepath.Join(modelioDir, "rescaled.onnx"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Parameters: 141 in 5 tensors: every float initializer the forecast depends on, trained with the model, except the constants below",
		"head.bias",
		"Constants (initializers the forecast depends on that are not parameters): 2",
		`y_mean  rescales the output of MatMul node "/head/MatMul"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
