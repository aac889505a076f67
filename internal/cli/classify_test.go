package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// classifyDir holds a GRU classifier of benchmarks/classification
// (benchmarks/classification/make.py: the logit and probability exports of
// one model, the first 40 training, 20 test and 30 calibration sequences,
// and PyTorch's probabilities of the first three test sequences).
const classifyDir = "testdata/classify"

type classStep struct {
	T           float64  `json:"t"`
	Probability *float64 `json:"probability"`
	ProbLower   *float64 `json:"prob_lower"`
	ProbUpper   *float64 `json:"prob_upper"`
	Lower       *float64 `json:"lower"`
	Upper       *float64 `json:"upper"`
	SplitLower  *float64 `json:"split_lower"`
	SplitUpper  *float64 `json:"split_upper"`
	Set         []int    `json:"set"`
	SplitSet    []int    `json:"split_set"`
	Target      *float64 `json:"target"`
}

type classDoc struct {
	Summary struct {
		SetCoverage *float64 `json:"set_coverage"`
		MeanSetSize *float64 `json:"mean_set_size"`
		Brier       *float64 `json:"brier"`
	} `json:"summary"`
	Classification *struct {
		Labelled  int `json:"labelled"`
		Jackknife struct {
			Coverage float64 `json:"coverage"`
		} `json:"jackknife_sets"`
		FlagAbove *struct {
			Flagged int `json:"flagged"`
		} `json:"flag_above"`
	} `json:"classification"`
	Sequences []struct {
		ID    string      `json:"id"`
		Steps []classStep `json:"steps"`
	} `json:"sequences"`
}

func runClassify(t *testing.T, model, loss string) classDoc {
	t.Helper()
	js := filepath.Join(t.TempDir(), "r.json")
	code, _, errs := runCmd("--model", filepath.Join(classifyDir, model), "--data", filepath.Join(classifyDir, "train.csv"),
		"--test", filepath.Join(classifyDir, "test.csv"), "--calibration", filepath.Join(classifyDir, "cal.csv"),
		"--loss", loss, "--ridge", "0.18", "--flag-above", "0.8", "--json", js)
	if code != 0 {
		t.Fatalf("--loss %s: exit %d: %s", loss, code, errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var d classDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestClassifierAudit audits the same binary classifier exported with a
// logit output (--loss bce-logits: the audit applies the sigmoid) and
// with a probability output (--loss bce) and checks: the probabilities
// against PyTorch's; both audits agree (probabilities, their limits and
// the sets); every forecast has a probability interval about its
// probability inside (0, 1); the jackknife+ LAC sets agree with the
// jackknife+ limits of the probability, computed by another path (label
// y is in the set exactly when the limits hold y, docs/design.md); the
// split-conformal sets likewise with the split limits; and the summary
// carries the classifier's figures.
func TestClassifierAudit(t *testing.T) {
	logit := runClassify(t, "binary_logits.onnx", "bce-logits")
	prob := runClassify(t, "binary_prob.onnx", "bce")
	var ref struct {
		IDs         []int       `json:"ids"`
		Probability [][]float64 `json:"probability"`
	}
	b, err := os.ReadFile(filepath.Join(classifyDir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for i := range ref.IDs {
		for k, want := range ref.Probability[i] {
			if got := *logit.Sequences[i].Steps[k].Probability; math.Abs(got-want) > 1e-9 {
				t.Errorf("sequence %d step %d: probability %.12g, PyTorch %.12g", ref.IDs[i], k+1, got, want)
			}
		}
	}
	n := 0
	for i, s := range logit.Sequences {
		for k, a := range s.Steps {
			c := prob.Sequences[i].Steps[k]
			if a.Probability == nil || a.ProbLower == nil || a.ProbUpper == nil || a.Set == nil || a.SplitSet == nil {
				t.Fatalf("sequence %s step %d lacks a classifier's keys: %+v", s.ID, k+1, a)
			}
			if math.Abs(*a.Probability-*c.Probability) > 1e-12 || math.Abs(*a.ProbLower-*c.ProbLower) > 1e-6 ||
				math.Abs(*a.ProbUpper-*c.ProbUpper) > 1e-6 || !slices.Equal(a.Set, c.Set) {
				t.Errorf("sequence %s step %d: logit model %v %v %v %v, probability model %v %v %v %v", s.ID, k+1,
					*a.Probability, *a.ProbLower, *a.ProbUpper, a.Set, *c.Probability, *c.ProbLower, *c.ProbUpper, c.Set)
			}
			if !(0 < *a.ProbLower && *a.ProbLower <= *a.Probability && *a.Probability <= *a.ProbUpper && *a.ProbUpper < 1) {
				t.Errorf("sequence %s step %d: probability %g outside its interval [%g, %g]", s.ID, k+1, *a.Probability, *a.ProbLower, *a.ProbUpper)
			}
			for y := 0; y <= 1; y++ {
				fy := float64(y)
				if in := *a.Lower <= fy && fy <= *a.Upper; in != slices.Contains(a.Set, y) {
					t.Errorf("sequence %s step %d: label %d in limits [%g, %g]: %v, in the set %v", s.ID, k+1, y, *a.Lower, *a.Upper, in, a.Set)
				}
				if in := *a.SplitLower <= fy && fy <= *a.SplitUpper; in != slices.Contains(a.SplitSet, y) {
					t.Errorf("sequence %s step %d: label %d in split limits: %v, in the split set %v", s.ID, k+1, y, in, a.SplitSet)
				}
			}
			n++
		}
	}
	if n != 240 {
		t.Errorf("%d forecasts, want 240", n)
	}
	c := logit.Classification
	if c == nil || c.Labelled != 240 || logit.Summary.SetCoverage == nil || *logit.Summary.SetCoverage != c.Jackknife.Coverage || c.FlagAbove == nil {
		t.Fatalf("classification summary missing or inconsistent: %+v", c)
	}
	if cov := c.Jackknife.Coverage; cov < 0.8 {
		t.Errorf("jackknife+ set coverage %g at alpha 0.1", cov)
	}
}

// TestClassifierFlagsNeedClassifier: the classifier's flags are refused
// with a regression loss, and label smoothing outside [0, 1) or without
// softmax-ce.
func TestClassifierFlagsNeedClassifier(t *testing.T) {
	for _, args := range [][]string{{"--flag-above", "0.5"}, {"--loss", "softmax-ce", "--label-smoothing", "1"}, {"--loss", "bce", "--label-smoothing", "0.1"}, {"--loss", "bce", "--set-score", "x"}, {"--loss", "bce", "--flag-below", "2"}} {
		code, _, errs := runCmd(append([]string{"--model", exModel, "--data", exTrain}, args...)...)
		if code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestClassifierFitPredict: audit fit --save and audit predict --load of
// a logit classifier give every forecast the probability, its interval
// and the sets that the one-shot audit gives (the saved options carry
// --loss bce-logits, so predict appends the sigmoid again).
func TestClassifierFitPredict(t *testing.T) {
	dir := t.TempDir()
	art, js := filepath.Join(dir, "a.rna"), filepath.Join(dir, "p.json")
	model := filepath.Join(classifyDir, "binary_logits.onnx")
	code, _, errs := runCmd("fit", "--model", model, "--data", filepath.Join(classifyDir, "train.csv"),
		"--calibration", filepath.Join(classifyDir, "cal.csv"), "--loss", "bce-logits", "--ridge", "0.18", "--flag-above", "0.8", "--save", art)
	if code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	if code, _, errs = runCmd("predict", "--load", art, "--model", model, "--data", filepath.Join(classifyDir, "test.csv"), "--out", js); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var got classDoc
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := runClassify(t, "binary_logits.onnx", "bce-logits")
	if len(got.Sequences) != len(want.Sequences) || got.Classification == nil {
		t.Fatalf("predict: %d sequences, classification %v", len(got.Sequences), got.Classification)
	}
	for i, s := range want.Sequences {
		for k, w := range s.Steps {
			g := got.Sequences[i].Steps[k]
			if g.Probability == nil || math.Abs(*g.Probability-*w.Probability) > 1e-12 || math.Abs(*g.ProbLower-*w.ProbLower) > 1e-9 ||
				math.Abs(*g.ProbUpper-*w.ProbUpper) > 1e-9 || !slices.Equal(g.Set, w.Set) || !slices.Equal(g.SplitSet, w.SplitSet) {
				t.Fatalf("sequence %s step %d: predict %+v, audit %+v", s.ID, k+1, g, w)
			}
		}
	}
}

// TestClassifierOneLabelPerSequence audits sequence classification: the
// label on each sequence's last row, the other target cells empty (no
// loss term, no forecast judged). Every forecast still gets its
// probability and set; only the 20 labelled ones are judged, and their
// sets agree with the jackknife+ limits of the probability.
func TestClassifierOneLabelPerSequence(t *testing.T) {
	dir := t.TempDir()
	blank := func(name string) string {
		b, err := os.ReadFile(filepath.Join(classifyDir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for i := 1; i < len(lines); i++ {
			f := strings.Split(lines[i], ",")
			if f[1] != "12" {
				f[4] = ""
			}
			lines[i] = strings.Join(f, ",")
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	js := filepath.Join(dir, "r.json")
	code, _, errs := runCmd("--model", filepath.Join(classifyDir, "binary_logits.onnx"), "--data", blank("train.csv"),
		"--test", blank("test.csv"), "--loss", "bce-logits", "--ridge", "0.18", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var d classDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Classification == nil || d.Classification.Labelled != 20 {
		t.Fatalf("classification %+v, want 20 labelled forecasts", d.Classification)
	}
	labelled := 0
	for _, s := range d.Sequences {
		for k, st := range s.Steps {
			if st.Probability == nil || st.Set == nil {
				t.Fatalf("sequence %s step %d has no probability or set", s.ID, k+1)
			}
			if st.Target == nil {
				continue
			}
			labelled++
			if st.T != 12 {
				t.Errorf("sequence %s: a label at step %g", s.ID, st.T)
			}
			for y := 0; y <= 1; y++ {
				if in := *st.Lower <= float64(y) && float64(y) <= *st.Upper; in != slices.Contains(st.Set, y) {
					t.Errorf("sequence %s: label %d in the limits %v, in the set %v", s.ID, y, in, st.Set)
				}
			}
		}
	}
	if labelled != 20 {
		t.Errorf("%d labelled forecasts, want 20", labelled)
	}
}

// TestClassifierClassWeights: --class-weights 1,1 is the unweighted
// audit, number for number; weights 1,4 (BCEWithLogitsLoss's
// pos_weight 4) change the leave-one-block-out models and with them the
// probabilities' intervals, but not the trained model's probabilities.
func TestClassifierClassWeights(t *testing.T) {
	run := func(extra ...string) classDoc {
		js := filepath.Join(t.TempDir(), "r.json")
		args := append([]string{"--model", filepath.Join(classifyDir, "binary_logits.onnx"), "--data", filepath.Join(classifyDir, "train.csv"),
			"--test", filepath.Join(classifyDir, "test.csv"), "--loss", "bce-logits", "--ridge", "0.18", "--json", js}, extra...)
		if code, _, errs := runCmd(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var d classDoc
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	plain, ones, pos := run(), run("--class-weights", "1,1"), run("--class-weights", "1,4")
	moved := 0
	for i, s := range plain.Sequences {
		for k, a := range s.Steps {
			b, c := ones.Sequences[i].Steps[k], pos.Sequences[i].Steps[k]
			if *a.ProbLower != *b.ProbLower || *a.ProbUpper != *b.ProbUpper || !slices.Equal(a.Set, b.Set) {
				t.Fatalf("sequence %s step %d: --class-weights 1,1 differs from no weights", s.ID, k+1)
			}
			if *a.Probability != *c.Probability {
				t.Fatalf("sequence %s step %d: class weights changed the trained model's probability", s.ID, k+1)
			}
			if math.Abs(*a.ProbLower-*c.ProbLower) > 1e-9 {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Error("class weights 1,4 left every probability interval where it was")
	}
	if code, _, _ := runCmd("--model", exModel, "--data", exTrain, "--loss", "bce", "--class-weights", "1"); code != 2 {
		t.Errorf("--class-weights 1: exit %d, want 2", code)
	}
}
