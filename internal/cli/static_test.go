package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// staticModel is the GRU of the zoo whose input static [batch, 2] takes
// the per-sequence columns age and sex of train_static.csv.
var (
	staticModel = filepath.Join(zooInputsDir, "gru_static_op14.onnx")
	staticTrain = filepath.Join(zooInputsDir, "train_static.csv")
)

// TestStaticInspectAgrees checks that audit inspect and the audit say the
// same of an input of static covariates: without --input both say its
// columns must be named; with --input both fill it from them, one value
// per sequence, and inspect's trial run runs.
func TestStaticInspectAgrees(t *testing.T) {
	code, out, errs := runCmd("inspect", "--model", staticModel)
	if code != 0 || !strings.Contains(out, "2 per-sequence values (static covariates): name their columns with --input static=A,B,...") {
		t.Fatalf("inspect without --input: exit %d, %s%s", code, out, errs)
	}
	code, _, errs = runCmd("--model", staticModel, "--data", staticTrain, "--quiet")
	if code == 0 || !strings.Contains(errs, "takes 2 per-sequence values (static covariates) and no column is named for it") || !strings.Contains(errs, "as static=A,B,...") || !strings.Contains(errs, "(--input)") {
		t.Fatalf("audit without --input: exit %d, %s", code, errs)
	}
	code, out, errs = runCmd("inspect", "--model", staticModel, "--input", "static=age,sex")
	if code != 0 || !strings.Contains(out, "per-sequence values (static covariates) from columns age, sex (--input)") || !strings.Contains(out, "Trial run: 2 sequences of 5 steps give y [2 5 1]") {
		t.Fatalf("inspect with --input: exit %d, %s%s", code, out, errs)
	}
	code, out, errs = runCmd("--model", staticModel, "--data", staticTrain, "--input", "static=age,sex")
	if code != 0 || !strings.Contains(out, "static ← age, sex, one value per sequence (--input)") {
		t.Fatalf("audit with --input: exit %d, %s%s", code, out, errs)
	}
	code, out, errs = runCmd("inspect", "--model", staticModel, "--input", "static=age")
	if code != 0 || !strings.Contains(out, "nothing: it takes 2 per-sequence values (static covariates), --input names 1 columns") {
		t.Fatalf("inspect with one column: exit %d, %s%s", code, out, errs)
	}
	code, _, errs = runCmd("--model", staticModel, "--data", staticTrain, "--input", "static=age", "--quiet")
	if code == 0 || !strings.Contains(errs, "takes 2 per-sequence values (static covariates), but 1 columns are named (age)") {
		t.Fatalf("audit with one column: exit %d, %s", code, errs)
	}
}

// TestStaticFitPredictServe fits the static-covariate GRU, predicts on a
// file, serves the fit and checks that the server answers as predict does;
// predict refuses a file in which one sequence's age varies, naming the
// sequence, the column and the lines.
func TestStaticFitPredictServe(t *testing.T) {
	dir := t.TempDir()
	art := filepath.Join(dir, "static.rna")
	if code, _, errs := runCmd("fit", "--save", art, "--model", staticModel, "--data", staticTrain, "--input", "static=age,sex", "--quiet"); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	// The test file: the first 5 sequences of the training file.
	b, err := os.ReadFile(staticTrain)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	test := filepath.Join(dir, "test.csv")
	if err := os.WriteFile(test, []byte(strings.Join(lines[:1+5*12], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pjs := filepath.Join(dir, "p.json")
	if code, _, errs := runCmd("predict", "--load", art, "--data", test, "--out", pjs, "--quiet"); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	want, err := os.ReadFile(pjs)
	if err != nil {
		t.Fatal(err)
	}
	// The same sequences as a request: features in the file's order
	// (x1, x2, age, sex).
	type row struct {
		T        json.Number   `json:"t"`
		Features []json.Number `json:"features"`
		Target   json.Number   `json:"target"`
	}
	type seq struct {
		ID   string `json:"id"`
		Rows []row  `json:"rows"`
	}
	var seqs []*seq
	for _, l := range lines[1 : 1+5*12] {
		f := strings.Split(l, ",")
		if len(seqs) == 0 || seqs[len(seqs)-1].ID != f[0] {
			seqs = append(seqs, &seq{ID: f[0]})
		}
		s := seqs[len(seqs)-1]
		s.Rows = append(s.Rows, row{T: json.Number(f[1]), Features: []json.Number{json.Number(f[2]), json.Number(f[3]), json.Number(f[4]), json.Number(f[5])}, Target: json.Number(f[6])})
	}
	req, err := json.Marshal(map[string]any{"sequences": seqs})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerFor(t, art, staticModel)
	resp, err := http.Post(ts.url+"/v1/predict", "application/json", bytes.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("serve: status %d, %v: %.300s", resp.StatusCode, err, got)
	}
	if gs, ws := decodeSequences(t, got), decodeSequences(t, want); len(gs) != 5 || !reflect.DeepEqual(gs, ws) {
		t.Errorf("the server's %d sequences differ from audit predict's %d", len(gs), len(ws))
	}
	// s01's age changes on its fourth row (line 17).
	f := strings.Split(lines[1+12+3], ",")
	f[4] = "99"
	lines[1+12+3] = strings.Join(f, ",")
	if err := os.WriteFile(test, []byte(strings.Join(lines[:1+5*12], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCmd("predict", "--load", art, "--data", test, "--quiet")
	for _, w := range []string{`sequence "s01" of ` + test, `column "age"`, "at line 14", "99 at line 17", "varies within the sequence"} {
		if code == 0 || !strings.Contains(errs, w) {
			t.Fatalf("predict with a varying age: exit %d, %s; want %q", code, errs, w)
		}
	}
}
