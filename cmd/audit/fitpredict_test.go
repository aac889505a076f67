package main

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
	if code, _, errs := runCmd(append([]string{"--test", exTest, "--out", rcsv, "--out", rjs}, common...)...); code != 0 {
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
