package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTargetScaleRecorded: a model whose export recorded its target
// scaling (the Python bridge's export(..., target_scale=(50, 20)):
// metadata rnnaudit.target_scale) audits data in the target's units as
// --target-scale 50,20 does on the same model without the record: the
// same summary, in y's units (50 + 20 x the scaled audit's width).
func TestTargetScaleRecorded(t *testing.T) {
	dir := filepath.Join("..", "..", "audit", "testdata", "tutorial")
	tmp := t.TempDir()
	scale := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		for i, l := range lines[1:] {
			f := strings.Split(l, ",")
			if f[3] != "" {
				y, _ := strconv.ParseFloat(f[3], 64)
				f[3] = strconv.FormatFloat(50+20*y, 'g', -1, 64)
			}
			lines[i+1] = strings.Join(f, ",")
		}
		out := filepath.Join(tmp, name)
		if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	train, test := scale("train.csv"), scale("test.csv")
	code, recorded, errs := runCmd("--model", filepath.Join(dir, "scaled.onnx"), "--data", train, "--test", test)
	if code != 0 {
		t.Fatalf("recorded scale: exit %d: %s", code, errs)
	}
	code, given, errs := runCmd("--model", filepath.Join(dir, "dynamic.onnx"), "--data", train, "--test", test, "--target-scale", "50,20")
	if code != 0 {
		t.Fatalf("--target-scale: exit %d: %s", code, errs)
	}
	if recorded != given || !strings.Contains(recorded, "Forecasts are in the target's units: 50 + 20 × the model's output") {
		t.Errorf("the recorded scale and --target-scale differ:\n%s\n---\n%s", recorded, given)
	}
	if code, _, errs := runCmd("--model", filepath.Join(dir, "dynamic.onnx"), "--data", train, "--target-scale", "50"); code != 2 || !strings.Contains(errs, "--target-scale \"50\"") {
		t.Errorf("one number: exit %d, %s", code, errs)
	}
}
