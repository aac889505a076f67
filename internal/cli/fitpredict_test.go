package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFitPredictCommand runs audit fit and audit predict on the small
// synthetic example with its calibration split and checks that predict's
// CSV and JSON equal a full audit's of the same test file, byte for byte
// (the same floats), and that predict refuses another model.
func TestFitPredictCommand(t *testing.T) {
	dir := t.TempDir()
	art := filepath.Join(dir, "a.rna")
	common := []string{"--model", exModel, "--data", exTrain, "--calibration", exCal, "--ridge", "10", "--low", "0", "--high", "10", "--quiet"}
	if code, _, errs := runCmd(append([]string{"fit", "--save", art}, common...)...); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	pcsv, pjs := filepath.Join(dir, "p.csv"), filepath.Join(dir, "p.json")
	if code, _, errs := runCmd("predict", "--load", art, "--data", exTest, "--out", pcsv, "--out", pjs, "--quiet"); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	rcsv, rjs := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.json")
	// The full audit without the damping sensitivity, which re-runs the
	// solve and which a fit does not compute.
	if code, _, errs := runCmd(append([]string{"--test", exTest, "--out", rcsv, "--out", rjs, "--damping-sensitivity=false"}, common...)...); code != 0 {
		t.Fatalf("audit: exit %d: %s", code, errs)
	}
	for _, pair := range [][2]string{{pcsv, rcsv}, {pjs, rjs}} {
		p, err := os.ReadFile(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		r, err := os.ReadFile(pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 || !bytes.Equal(dropCommand(p), dropCommand(r)) {
			t.Errorf("%s differs from the full audit's %s", filepath.Base(pair[0]), filepath.Base(pair[1]))
		}
	}
	// Another model: refused, naming the hash.
	other := "../../examples/synthetic/model.onnx"
	code, _, errs := runCmd("predict", "--load", art, "--model", other, "--data", exTest, "--quiet")
	if code != 1 || !strings.Contains(errs, "SHA-256") {
		t.Errorf("predict with another model: exit %d, %s", code, errs)
	}
	if code, _, errs := runCmd("fit", "--model", exModel, "--data", exTrain, "--ridge", "10"); code != 2 || !strings.Contains(errs, "--save") {
		t.Errorf("fit without --save: exit %d, %s", code, errs)
	}
}

// dropCommand removes the lines that name the command line, which differ
// between fit + predict and a full audit.
func dropCommand(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(l, []byte(`"command"`)) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// TestFitPredictOutputsNotInputs checks that fit's --save and predict's
// --out never replace a file the command reads (a past data loss, for the
// two commands with flag sets of their own): each is refused with exit
// 2 and the input keeps its bytes.
func TestFitPredictOutputsNotInputs(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	b, err := os.ReadFile(exTrain)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(train, b, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(train, link); err != nil {
		t.Fatal(err)
	}
	unchanged := func(what string) {
		t.Helper()
		if got, err := os.ReadFile(train); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: the training file changed", what)
		}
	}
	code, _, errs := runCmd("fit", "--model", exModel, "--data", train, "--ridge", "10", "--quiet", "--save", link)
	if code != 2 || !strings.Contains(errs, "--save") || !strings.Contains(errs, "--data") {
		t.Errorf("fit --save onto --data: exit %d, %s", code, errs)
	}
	unchanged("fit --save onto --data")

	art := filepath.Join(dir, "a.rna")
	if code, _, errs := runCmd("fit", "--model", exModel, "--data", train, "--ridge", "10", "--quiet", "--save", art); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	code, _, errs = runCmd("predict", "--load", art, "--data", train, "--out", link, "--quiet")
	if code != 2 || !strings.Contains(errs, "--out") || !strings.Contains(errs, "--data") {
		t.Errorf("predict --out onto --data: exit %d, %s", code, errs)
	}
	unchanged("predict --out onto --data")
	// A fitted audit saved under a report's extension.
	art = filepath.Join(dir, "a.json")
	if code, _, errs := runCmd("fit", "--model", exModel, "--data", train, "--ridge", "10", "--quiet", "--save", art); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	artBytes, _ := os.ReadFile(art)
	code, _, errs = runCmd("predict", "--load", art, "--data", exTest, "--out", art, "--quiet")
	if code != 2 || !strings.Contains(errs, "--load") {
		t.Errorf("predict --out onto --load: exit %d, %s", code, errs)
	}
	if got, _ := os.ReadFile(art); !bytes.Equal(got, artBytes) {
		t.Error("predict --out onto --load changed the fitted audit")
	}
}
