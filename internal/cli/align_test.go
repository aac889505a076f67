package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAlignFitPredict checks that --align last reaches the fit's artifact:
// predict --load gives the predictions of the audit with --align last on
// the same test file, and they differ from those of the default alignment
// (the model then reads two rows fewer).
func TestAlignFitPredict(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(zooInputsDir, "decoder_last3_op14.onnx")
	base := []string{"--model", model, "--data", staticTrain, "--features", "x1,x2", "--horizons", "3", "--quiet"}
	predictions := func(path string) []string {
		t.Helper()
		header, rows := readCSVFile(t, path)
		k := slices.Index(header, "prediction")
		if k < 0 {
			t.Fatalf("%s: no prediction column in %v", path, header)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r[k])
		}
		return out
	}
	last, after := filepath.Join(dir, "last.csv"), filepath.Join(dir, "after.csv")
	if code, _, errs := runCmd(append(base, "--test", staticTrain, "--align", "last", "--out", last)...); code != 0 {
		t.Fatalf("audit --align last: exit %d: %s", code, errs)
	}
	if code, _, errs := runCmd(append(base, "--test", staticTrain, "--out", after)...); code != 0 {
		t.Fatalf("audit: exit %d: %s", code, errs)
	}
	art, pred := filepath.Join(dir, "a.rna"), filepath.Join(dir, "p.csv")
	if code, _, errs := runCmd(append([]string{"fit", "--save", art, "--align", "last"}, base...)...); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	if code, _, errs := runCmd("predict", "--load", art, "--data", staticTrain, "--out", pred, "--quiet"); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	pl, pa, pp := predictions(last), predictions(after), predictions(pred)
	if len(pl) != 120 || !slices.Equal(pl, pp) {
		t.Errorf("predict's %d predictions differ from the audit's %d with --align last", len(pp), len(pl))
	}
	if slices.Equal(pl, pa) {
		t.Error("--align last gives the predictions of the default alignment")
	}
}

// readCSVFile reads a CSV file of the command's output: header and rows.
func readCSVFile(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, path)
	return rows[0], rows[1:]
}
