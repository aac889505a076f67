package cli

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// multiclassDir holds the 3-class GRU sequence classifier of
// benchmarks/classification (multiclass.py: its model, the first 60
// training, 20 test and 40 calibration sequences, one label each on
// the last row, and PyTorch's softmax of the model's logits on the 20
// test sequences).
const multiclassDir = "testdata/multiclass"

type multiStep struct {
	T             float64   `json:"t"`
	Prediction    float64   `json:"prediction"`
	Lower         *float64  `json:"lower"`
	Upper         *float64  `json:"upper"`
	SplitLower    *float64  `json:"split_lower"`
	SplitUpper    *float64  `json:"split_upper"`
	Probability   *float64  `json:"probability"`
	Probabilities []float64 `json:"probabilities"`
	ProbLower     []float64 `json:"prob_lower"`
	ProbUpper     []float64 `json:"prob_upper"`
	Set           []int     `json:"set"`
	SplitSet      []int     `json:"split_set"`
	Target        *float64  `json:"target"`
	Label         *int      `json:"label"`
}

type multiDoc struct {
	Summary struct {
		SetCoverage *float64 `json:"set_coverage"`
		MeanSetSize *float64 `json:"mean_set_size"`
		Brier       *float64 `json:"brier"`
		LogLoss     *float64 `json:"log_loss"`
		ECE         *float64 `json:"ece"`
	} `json:"summary"`
	Classification *struct {
		Classes  int `json:"classes"`
		Labelled int `json:"labelled"`
	} `json:"classification"`
	Sequences []struct {
		ID    string      `json:"id"`
		Steps []multiStep `json:"steps"`
	} `json:"sequences"`
}

func readMulti(t *testing.T, path string) multiDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d multiDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func runMulti(t *testing.T, score string, extra ...string) (multiDoc, string) {
	t.Helper()
	dir := t.TempDir()
	js, cs := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv")
	args := append([]string{"--model", filepath.Join(multiclassDir, "multiclass.onnx"), "--data", filepath.Join(multiclassDir, "train.csv"),
		"--test", filepath.Join(multiclassDir, "test.csv"), "--calibration", filepath.Join(multiclassDir, "cal.csv"),
		"--loss", "softmax-ce", "--ridge", "0.06", "--set-score", score, "--json", js, "--out", cs}, extra...)
	if code, _, errs := runCmd(args...); code != 0 {
		t.Fatalf("--set-score %s: exit %d: %s", score, code, errs)
	}
	return readMulti(t, js), cs
}

// TestMulticlassAudit audits a 3-class sequence classifier (softmax-ce,
// one label per sequence on its last row) and checks every forecast
// against independent references: its probabilities against PyTorch's
// softmax of the model's logits; each class's interval about its
// probability inside (0, 1); the jackknife+ set holds the label exactly
// when the jackknife+ limits of the number the interval arithmetic reads
// (1 - the label's score) hold 1, computed by another path; the
// split-conformal LAC set is the classes whose score 1 - p_y is at most
// the conformal quantile (half the split limits' width), worked here
// from the probabilities; the summary's Brier score and log loss, worked
// here from the probabilities and labels; and the CSV's columns.
func TestMulticlassAudit(t *testing.T) {
	d, csvPath := runMulti(t, "lac")
	var ref struct {
		IDs           []int       `json:"ids"`
		Probabilities [][]float64 `json:"probabilities"`
	}
	b, err := os.ReadFile(filepath.Join(multiclassDir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(d.Sequences) != len(ref.IDs) {
		t.Fatalf("%d sequences, want %d", len(d.Sequences), len(ref.IDs))
	}
	var brier, logLoss, covered float64
	for i, s := range d.Sequences {
		if len(s.Steps) != 1 {
			t.Fatalf("sequence %s: %d forecasts, want 1 (many-to-one)", s.ID, len(s.Steps))
		}
		st := s.Steps[0]
		if s.ID != strconv.Itoa(ref.IDs[i]) || st.T != 10 || st.Target == nil || *st.Target != 1 || st.Label == nil {
			t.Fatalf("sequence %s: step %g, target %v, label %v", s.ID, st.T, st.Target, st.Label)
		}
		if st.Probability != nil || len(st.Probabilities) != 3 || len(st.ProbLower) != 3 || len(st.ProbUpper) != 3 || st.SplitSet == nil {
			t.Fatalf("sequence %s: not a 3-class forecast: %+v", s.ID, st)
		}
		for k, want := range ref.Probabilities[i] {
			if got := st.Probabilities[k]; math.Abs(got-want) > 1e-9 {
				t.Errorf("sequence %s class %d: probability %.12g, PyTorch %.12g", s.ID, k, got, want)
			}
			if !(0 < st.ProbLower[k] && st.ProbLower[k] <= st.Probabilities[k] && st.Probabilities[k] <= st.ProbUpper[k] && st.ProbUpper[k] < 1) {
				t.Errorf("sequence %s class %d: probability %g outside its interval [%g, %g]", s.ID, k, st.Probabilities[k], st.ProbLower[k], st.ProbUpper[k])
			}
		}
		y := *st.Label
		if math.Abs(st.Prediction-st.Probabilities[y]) > 1e-15 {
			t.Errorf("sequence %s: prediction %g, want the true class's probability %g (LAC)", s.ID, st.Prediction, st.Probabilities[y])
		}
		if in := *st.Lower <= 1 && 1 <= *st.Upper; in != slices.Contains(st.Set, y) {
			t.Errorf("sequence %s: label %d: 1 in limits [%g, %g] %v, set %v", s.ID, y, *st.Lower, *st.Upper, in, st.Set)
		}
		q := (*st.SplitUpper - *st.SplitLower) / 2
		var want []int
		for k, p := range st.Probabilities {
			if 1-p <= q {
				want = append(want, k)
			}
		}
		if !slices.Equal(st.SplitSet, want) && !(len(want) == 0 && len(st.SplitSet) == 0) {
			t.Errorf("sequence %s: split set %v, want %v (q = %g, p = %v)", s.ID, st.SplitSet, want, q, st.Probabilities)
		}
		for k, p := range st.Probabilities {
			e := p
			if k == y {
				e = p - 1
			}
			brier += e * e / 20
		}
		logLoss -= math.Log(st.Probabilities[y]) / 20
		if slices.Contains(st.Set, y) {
			covered++
		}
	}
	c := d.Classification
	if c == nil || c.Classes != 3 || c.Labelled != 20 {
		t.Fatalf("classification %+v, want 3 classes and 20 labelled forecasts", c)
	}
	sm := d.Summary
	if sm.SetCoverage == nil || *sm.SetCoverage != covered/20 || sm.Brier == nil || math.Abs(*sm.Brier-brier) > 1e-12 ||
		sm.LogLoss == nil || math.Abs(*sm.LogLoss-logLoss) > 1e-12 || sm.ECE == nil || sm.MeanSetSize == nil {
		t.Errorf("summary %+v: want coverage %g, Brier %g, log loss %g", sm, covered/20, brier, logLoss)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	first := d.Sequences[0].Steps[0]
	for _, name := range []string{"probability", "prob_lower", "prob_upper", "set"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("CSV header %v lacks %s", recs[0], name)
		}
	}
	if got := strings.Fields(recs[1][col["probability"]]); len(got) != 3 {
		t.Errorf("CSV probability %q, want 3 numbers", recs[1][col["probability"]])
	} else if p, _ := strconv.ParseFloat(got[2], 64); p != first.Probabilities[2] {
		t.Errorf("CSV probability of class 2 %g, JSON %g", p, first.Probabilities[2])
	}
}

// TestMulticlassScores: the APS and RAPS sets of the same model are
// sets of class indices whose labels' coverage agrees with the limits
// of 1 - score (the identity TestMulticlassAudit checks for LAC), and
// fit --save with predict --load gives the one-shot audit's forecasts.
func TestMulticlassScores(t *testing.T) {
	for _, score := range []string{"aps", "raps"} {
		d, _ := runMulti(t, score)
		for _, s := range d.Sequences {
			st := s.Steps[0]
			y := *st.Label
			if in := *st.Lower <= 1 && 1 <= *st.Upper; in != slices.Contains(st.Set, y) {
				t.Errorf("%s: sequence %s: label %d: 1 in limits [%g, %g] %v, set %v", score, s.ID, y, *st.Lower, *st.Upper, in, st.Set)
			}
			for _, k := range st.Set {
				if k < 0 || k > 2 {
					t.Errorf("%s: sequence %s: set %v", score, s.ID, st.Set)
				}
			}
		}
	}
	dir := t.TempDir()
	art, js := filepath.Join(dir, "a.rna"), filepath.Join(dir, "p.json")
	model := filepath.Join(multiclassDir, "multiclass.onnx")
	code, _, errs := runCmd("fit", "--model", model, "--data", filepath.Join(multiclassDir, "train.csv"),
		"--calibration", filepath.Join(multiclassDir, "cal.csv"), "--loss", "softmax-ce", "--ridge", "0.06", "--set-score", "aps", "--save", art)
	if code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	if code, _, errs = runCmd("predict", "--load", art, "--model", model, "--data", filepath.Join(multiclassDir, "test.csv"), "--out", js); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	got := readMulti(t, js)
	want, _ := runMulti(t, "aps")
	for i, s := range want.Sequences {
		g, w := got.Sequences[i].Steps[0], s.Steps[0]
		if !slices.Equal(g.Probabilities, w.Probabilities) || !slices.Equal(g.Set, w.Set) || !slices.Equal(g.SplitSet, w.SplitSet) {
			t.Fatalf("sequence %s: predict %+v, audit %+v", s.ID, g, w)
		}
		for k := range w.ProbLower {
			if math.Abs(g.ProbLower[k]-w.ProbLower[k]) > 1e-9 || math.Abs(g.ProbUpper[k]-w.ProbUpper[k]) > 1e-9 {
				t.Fatalf("sequence %s class %d: predict [%g, %g], audit [%g, %g]", s.ID, k, g.ProbLower[k], g.ProbUpper[k], w.ProbLower[k], w.ProbUpper[k])
			}
		}
	}
}

// TestMulticlassRefusals: a label that is no class index, class weights
// of the wrong count, and a flag on a K-class model are refused with one
// message naming what to change.
func TestMulticlassRefusals(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(multiclassDir, "train.csv"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	lines := strings.Split(string(b), "\n")
	lines[10] = lines[10][:strings.LastIndexByte(lines[10], ',')+1] + "3"
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(multiclassDir, "multiclass.onnx")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", bad}, "not a class index 0..2"},
		{[]string{"--data", filepath.Join(multiclassDir, "train.csv"), "--class-weights", "1,2"}, "2 class weights for a model of 3 classes"},
		{[]string{"--data", filepath.Join(multiclassDir, "train.csv"), "--flag-above", "0.5"}, "--flag-above"},
	} {
		code, _, errs := runCmd(append([]string{"--model", model, "--loss", "softmax-ce"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Contains(errs, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}

// TestMulticlassServe: audit serve, over a fit of the 3-class model,
// answers a sequence sent as JSON (without its target: a request gives a
// target in every row or in none, and a sequence classifier's label is
// on one row) with the probabilities, their limits and the set that
// audit predict gives for it.
func TestMulticlassServe(t *testing.T) {
	dir := t.TempDir()
	art, js := filepath.Join(dir, "a.rna"), filepath.Join(dir, "p.json")
	model := filepath.Join(multiclassDir, "multiclass.onnx")
	if code, _, errs := runCmd("fit", "--model", model, "--data", filepath.Join(multiclassDir, "train.csv"),
		"--loss", "softmax-ce", "--ridge", "0.06", "--save", art, "--quiet"); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	if code, _, errs := runCmd("predict", "--load", art, "--model", model, "--data", filepath.Join(multiclassDir, "test.csv"), "--out", js); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	want := readMulti(t, js).Sequences[0]
	b, err := os.ReadFile(filepath.Join(multiclassDir, "test.csv"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		T        json.Number   `json:"t"`
		Features []json.Number `json:"features"`
	}
	var rows []row
	for _, line := range strings.Split(string(b), "\n")[1:11] { // sequence 1001
		f := strings.Split(line, ",")
		rows = append(rows, row{T: json.Number(f[1]), Features: []json.Number{json.Number(f[2]), json.Number(f[3])}})
	}
	body, err := json.Marshal(map[string]any{"sequences": []any{map[string]any{"id": "1001", "rows": rows}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerFor(t, art, model)
	status, _, ans := ts.postTo(t, "/v1/predict", body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, ans)
	}
	raw, err := json.Marshal(ans)
	if err != nil {
		t.Fatal(err)
	}
	got := readMultiBytes(t, raw).Sequences
	if len(got) != 1 || len(got[0].Steps) != 1 {
		t.Fatalf("answer %s", raw)
	}
	g, w := got[0].Steps[0], want.Steps[0]
	// A batch of one sums in another order than predict's batch of 20.
	near := func(a, b []float64) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(x float64) bool { return math.IsNaN(x) }) &&
			slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-12 })
	}
	if !near(g.Probabilities, w.Probabilities) || !near(g.ProbLower, w.ProbLower) || !near(g.ProbUpper, w.ProbUpper) ||
		!slices.Equal(g.Set, w.Set) || g.Label != nil || g.Target != nil {
		t.Errorf("served %+v, predict %+v", g, w)
	}
}

func readMultiBytes(t *testing.T, b []byte) multiDoc {
	t.Helper()
	var d multiDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
