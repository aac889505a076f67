package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The calibration splits of the bundled examples, cut from their test
// files by examples/make_calibration.py.
const (
	exCal       = "../../examples/synthetic/cal_small.csv"
	chickDir    = "../../examples/chickweight"
	chickRidge  = "3000"
	calKindsLen = 6 // jackknife+, conformalized jackknife+, split, Bonferroni, in-sample, normalised
)

// stepKeys are the calibrated limits every step carries with a
// calibration set.
var stepKeys = []string{"split_lower", "split_upper", "bonferroni_lower", "bonferroni_upper",
	"conformal_jackknife_lower", "conformal_jackknife_upper", "m_calibration"}

// TestCalibrationExample runs the command with --calibration on the
// synthetic example and checks the printed recommendation, the JSON (every
// kind in the comparison, every kind's limits in every step, split
// conformal near its 90% target) and the comparison in the HTML and
// Markdown reports.
func TestCalibrationExample(t *testing.T) {
	dir := t.TempDir()
	js, html, md := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html"), filepath.Join(dir, "r.md")
	code, out, errs := runCmd("--model", exModel, "--data", exTrain, "--test", exTest, "--calibration", exCal, "--ridge", "10",
		"--low", "0", "--high", "10", "--json", js, "--out", html, "--out", md)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "Use ") || !strings.Contains(out, "its coverage holds") || strings.Contains(out, "A held-out calibration set") {
		t.Errorf("stdout lacks the recommendation:\n%s", out)
	}
	doc := readJSON(t, js)
	if doc["version"] != 3.0 {
		t.Errorf("version %v", doc["version"])
	}
	c := doc["conformal"].(map[string]any)
	if c["file"] != exCal || c["sequences"] != 200.0 || c["values"] != 2000.0 {
		t.Errorf("conformal %v %v %v", c["file"], c["sequences"], c["values"])
	}
	kinds := c["kinds"].([]any)
	if len(kinds) != calKindsLen {
		t.Fatalf("%d kinds", len(kinds))
	}
	var names []string
	for _, k := range kinds {
		km := k.(map[string]any)
		names = append(names, km["kind"].(string))
		for _, key := range []string{"coverage", "coverage_per_step", "joint_coverage", "mean_length", "length_per_step", "interval_score", "audit", "coverage_holds"} {
			if _, ok := km[key]; !ok {
				t.Errorf("kind %v lacks %s", km["kind"], key)
			}
		}
		if km["kind"] == "split_conformal" {
			if cov := km["coverage"].(float64); math.Abs(cov-0.9) > 0.078 { // see audit.TestCalibrationRun
				t.Errorf("split-conformal coverage %g, want near 0.9", cov)
			}
		}
	}
	if got := strings.Join(names, " "); got != "jackknife_plus conformal_jackknife_plus split_conformal split_conformal_bonferroni in_sample normalised_split_conformal" {
		t.Errorf("kinds %s", got)
	}
	if rec := c["recommendation"].(map[string]any); rec["text"] == "" {
		t.Errorf("recommendation %v", rec)
	}
	for _, s := range doc["sequences"].([]any) {
		for _, x := range s.(map[string]any)["steps"].([]any) {
			step := x.(map[string]any)
			for _, k := range stepKeys {
				if _, ok := step[k]; !ok {
					t.Fatalf("step lacks %s: %v", k, step)
				}
			}
			p := step["prediction"].(float64)
			if !(step["split_lower"].(float64) < p && p < step["split_upper"].(float64)) {
				t.Fatalf("prediction outside its split-conformal interval: %v", step)
			}
		}
	}
	page := readFile(t, html)
	mdText := readFile(t, md)
	for _, want := range []string{`<section id="kinds">`, "Interval kinds compared", "(recommended)", "split conformal, Bonferroni (joint)", "P_low precision"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	for _, want := range []string{"## Interval kinds compared", "(recommended)", "P\\_high recall"} {
		if !strings.Contains(mdText, want) {
			t.Errorf("the Markdown report lacks %q", want)
		}
	}
}

// TestCalibrationChickWeight: on the ChickWeight split (5 calibration
// chicks, 6 test chicks) a group of steps needs 19 calibration values at
// 90% (docs/design.md, section 6.5), so the 11 steps of 5 values each are
// grouped, which the report says; the split-conformal intervals are
// then finite (the joint, Bonferroni ones stay unbounded: 109 values per
// step would be needed); at alpha 0.2 they are finite too.
func TestCalibrationChickWeight(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--model", filepath.Join(chickDir, "model.onnx"), "--data", filepath.Join(chickDir, "train.csv"),
		"--test", filepath.Join(chickDir, "test_rest.csv"), "--calibration", filepath.Join(chickDir, "cal.csv"), "--ridge", chickRidge}
	js := filepath.Join(dir, "a.json")
	code, _, errs := runCmd(append(base, "--json", js)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	c := readJSON(t, js)["conformal"].(map[string]any)
	notes := c["notes"].([]any)
	if len(notes) == 0 || !strings.Contains(notes[0].(string), "quantiles at steps 1-11 are taken over groups of consecutive steps with at least 19 calibration values") {
		t.Errorf("notes %v", notes)
	}
	for _, k := range c["kinds"].([]any) {
		km := k.(map[string]any)
		switch km["kind"] {
		case "split_conformal":
			if km["infinite_intervals"] != 0.0 || km["mean_length"] == nil {
				t.Errorf("split conformal pooled over steps: %v unbounded, want none", km["infinite_intervals"])
			}
		case "split_conformal_bonferroni":
			if km["infinite_intervals"] != 66.0 {
				t.Errorf("Bonferroni with 5 calibration values: %v unbounded, want all 66", km["infinite_intervals"])
			}
		}
	}
	js2 := filepath.Join(dir, "b.json")
	if code, _, errs := runCmd(append(base, "--alpha", "0.2", "--json", js2)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, k := range readJSON(t, js2)["conformal"].(map[string]any)["kinds"].([]any) {
		km := k.(map[string]any)
		if km["kind"] == "split_conformal" && (km["infinite_intervals"] != 0.0 || km["mean_length"] == nil) {
			t.Errorf("split conformal at alpha 0.2 with 5 calibration values: %v", km)
		}
	}
}

// TestCalibrationErrors: a calibration file that overlaps the training or
// the test data, lacks the target or the features, or comes without
// --test is refused with one clear message.
func TestCalibrationErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := readRows(t, exCal)
	noTarget := make([][]string, len(rows))
	for i, r := range rows {
		noTarget[i] = r[:3]
	}
	noTargetPath := writeCSV(t, dir, "notarget.csv", noTarget)
	chickTest := filepath.Join(chickDir, "test.csv")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--data", exTrain, "--calibration", exCal}, 2, "--calibration needs --test"},
		{[]string{"--data", exTrain, "--test", exTest, "--calibration", exTrain}, 1,
			exTrain + `:2: calibration sequence "1" has the same steps and features as training sequence "1" (` + exTrain + " line 2), and 99 more calibration sequences overlap; a calibration set must be held out from training"},
		{[]string{"--data", exTrain, "--test", exTest, "--calibration", exTest}, 1, `calibration sequence "1" has the id of a training sequence`},
		{[]string{"--data", exTrain, "--test", exCal, "--calibration", exCal}, 1, "and 199 more calibration sequences overlap; calibration and test sequences must be different sequences"},
		{[]string{"--data", exTrain, "--test", exTest, "--calibration", noTargetPath}, 1, `notarget.csv:1: column "y"`},
		{[]string{"--data", exTrain, "--test", exTest, "--calibration", filepath.Join(dir, "missing.csv")}, 1, "--calibration " + filepath.Join(dir, "missing.csv")},
		{[]string{"--data", exTrain, "--test", exTest, "--calibration", exCal, "--out", exCal + ".json", "--json", exCal}, 2, "--json " + exCal + " is the same file as --calibration " + exCal},
		{[]string{"--data", filepath.Join(chickDir, "train.csv"), "--test", chickTest, "--calibration", filepath.Join(chickDir, "cal.csv")}, 1, "must be different sequences"},
	} {
		args := append([]string{"--model", exModel}, tc.args...)
		if strings.Contains(strings.Join(tc.args, " "), "chick") {
			args[1] = filepath.Join(chickDir, "model.onnx")
		}
		code, _, errs := runCmd(args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
		oneMessage(t, tc.args, errs, 1)
	}
}

// TestCalibrationConfig: the config file takes calibration, relative to
// the file.
func TestCalibrationConfig(t *testing.T) {
	dir, cfg := configDir(t, "model: model_small.onnx\ndata: train_small.csv\ntest: test_small.csv\ncalibration: cal_small.csv\nridge: 10\nquiet: true\n")
	b, err := os.ReadFile(exCal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cal_small.csv"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "c.json")
	if code, _, errs := runCmd("--config", cfg, "--json", js); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if c, ok := readJSON(t, js)["conformal"].(map[string]any); !ok || c["file"] != filepath.Join(dir, "cal_small.csv") {
		t.Errorf("conformal %v", c)
	}
}

// TestNoCalibrationHint: without --calibration the reports say in one
// line what a calibration set would add (the terminal summary does not
// repeat it on every run), and the JSON has conformal null.
func TestNoCalibrationHint(t *testing.T) {
	dir := t.TempDir()
	js, md := filepath.Join(dir, "n.json"), filepath.Join(dir, "n.md")
	code, out, errs := runCmd("--model", exModel, "--data", exTrain, "--test", exTest, "--ridge", "10", "--json", js, "--out", md)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "calibration set") {
		t.Errorf("the summary mentions calibration:\n%s", out)
	}
	if n := strings.Count(readFile(t, md), "A held-out calibration set (--calibration cal.csv"); n != 1 {
		t.Errorf("the hint appears %d times in the Markdown report", n)
	}
	doc := readJSON(t, js)
	if c, ok := doc["conformal"]; !ok || c != nil {
		t.Errorf("conformal = %v, want null", c)
	}
	step := doc["sequences"].([]any)[0].(map[string]any)["steps"].([]any)[0].(map[string]any)
	for _, k := range stepKeys {
		if _, ok := step[k]; ok {
			t.Errorf("step has %s without a calibration set", k)
		}
	}
}
