package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readJSON decodes a JSON report.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuditExample runs the command on the bundled example and checks the
// summary, the exit code and every report file.
func TestAuditExample(t *testing.T) {
	dir := t.TempDir()
	html, md, js := filepath.Join(dir, "report.html"), filepath.Join(dir, "report.md"), filepath.Join(dir, "result.json")
	args := []string{"--model", exModel, "--data", exTrain, "--test", exTest, "--low", "0", "--high", "10",
		"--out", html, "--out", md, "--json", js, "--seed", "3"}
	code, out, errs := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if errs != "" {
		t.Errorf("stderr is not a terminal, yet something was written to it: %q", errs)
	}
	for _, want := range []string{"90% intervals covered ", "% of 2,000 test values", "flagged ‘below 0’ with", "Mean interval width",
		"Report written to " + html + ", " + md + " (charts in " + filepath.Join(dir, "report_files") + "), " + js + "."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}

	doc := readJSON(t, js)
	sum := doc["summary"].(map[string]any)
	cov := sum["coverage"].(float64)
	if cov < 0.5 || cov > 1 {
		t.Errorf("coverage %g", cov)
	}
	if n := len(sum["coverage_per_step"].([]any)); n != 10 {
		t.Errorf("%d steps of coverage, want 10", n)
	}
	for _, k := range []string{"joint_coverage", "mean_length", "length_per_step", "rmse", "alpha"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
	low := sum["audit"].(map[string]any)["low"].(map[string]any)
	if low["threshold"] != 0.0 || low["precision"] == nil || low["recall"] == nil {
		t.Errorf("audit.low = %v", low)
	}
	st := doc["settings"].(map[string]any)
	if st["alpha"] != 0.1 || st["solver"] != "exact" || st["seed"] != 3.0 || st["test_file"] != exTest || st["self_audit"] != false {
		t.Errorf("settings %v", st)
	}
	cols := st["columns"].(map[string]any)
	if cols["id"] != "id" || cols["time"] != "t" || cols["target"] != "y" || fmt.Sprint(cols["features"]) != "[x]" {
		t.Errorf("columns %v", cols)
	}
	seqs := doc["sequences"].([]any)
	if len(seqs) != 200 {
		t.Fatalf("%d sequences, want 200", len(seqs))
	}
	for _, s := range seqs[:3] {
		steps := s.(map[string]any)["steps"].([]any)
		if len(steps) != 10 {
			t.Fatalf("%d steps, want 10", len(steps))
		}
		for _, x := range steps {
			step := x.(map[string]any)
			for _, k := range []string{"t", "horizon", "prediction", "lower", "upper", "target"} {
				if _, ok := step[k]; !ok {
					t.Fatalf("step lacks %s: %v", k, step)
				}
			}
			if lo, up := step["lower"].(float64), step["upper"].(float64); !(lo <= step["prediction"].(float64) && step["prediction"].(float64) <= up) {
				t.Errorf("prediction outside its interval: %v", step)
			}
		}
	}
	if _, ok := doc["timings"]; ok {
		t.Error("the JSON has timings without --timings")
	}

	page := readFile(t, html)
	for _, id := range []string{"coverage", "leverage", "width", "calibration", "fan-1", "fan-6", "influence", "gap"} {
		if !strings.Contains(page, `id="chart-`+id+`"`) {
			t.Errorf("the HTML report lacks the %s chart", id)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the HTML report has a script")
	}
	mdText := readFile(t, md)
	svgs, _ := filepath.Glob(filepath.Join(dir, "report_files", "*.svg"))
	if len(svgs) != 12 {
		t.Errorf("%d SVG files beside the Markdown report, want 12", len(svgs))
	}
	for _, s := range svgs {
		if !strings.Contains(mdText, "](report_files/"+filepath.Base(s)+")") {
			t.Errorf("the Markdown report does not link %s", filepath.Base(s))
		}
	}
}

// TestAuditSelf audits the training data (no --test), quietly, with the
// iterative solver. It audits the first 20 of the example's 100 training
// sequences: the cg solver runs one solve per left-out sequence, each over
// all the data, so 100 sequences cost 25 times as much (144 s of the pure-Go
// build) for the same checks of the self-audit path.
func TestAuditSelf(t *testing.T) {
	dir := t.TempDir()
	const nSeq = 20
	rows := readRows(t, exTrain)
	train := writeCSV(t, dir, "train20.csv", rows[:1+10*nSeq])
	js := filepath.Join(dir, "self.json")
	code, out, errs := runCmd("--model", exModel, "--data", train, "--out", js, "--quiet", "--alpha", "0.2", "--solver", "cg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if out != "" || errs != "" {
		t.Errorf("--quiet printed stdout %q stderr %q", out, errs)
	}
	doc := readJSON(t, js)
	st := doc["settings"].(map[string]any)
	if st["self_audit"] != true || st["alpha"] != 0.2 || st["solver"] != "cg" {
		t.Errorf("settings %v", st)
	}
	if n := len(doc["sequences"].([]any)); n != nSeq {
		t.Errorf("%d sequences, want the %d training sequences", n, nSeq)
	}
}

// TestAuditNoOutput prints the summary and says how to get a report.
func TestAuditNoOutput(t *testing.T) {
	code, out, errs := runCmd("--model", exModel, "--data", exTrain, "--test", exTest, "--layout", "batch-first")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "No report written: add --out report.html") {
		t.Errorf("stdout %q", out)
	}
}

// writeCSV writes rows (the first is the header) as a CSV file in dir.
func writeCSV(t *testing.T, dir, name string, rows [][]string) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		q := make([]string, len(r))
		for i, c := range r {
			if strings.ContainsAny(c, `",`) {
				c = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
			}
			q[i] = c
		}
		b.WriteString(strings.Join(q, ",") + "\n")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readRows reads a small CSV file without quotes.
func readRows(t *testing.T, path string) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		rows = append(rows, strings.Split(line, ","))
	}
	return rows
}

// TestUsageErrors: bad usage exits 2 with one line naming the problem,
// before any file is read.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	base := []string{"--model", exModel, "--data", exTrain}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", exModel}, "--data is required"},
		{[]string{"--data", exTrain}, "--model is required"},
		{append(base, "--frobnicate"), "unknown flag: --frobnicate"},
		{append(base, "--alpah", "0.1"), "did you mean --alpha?"},
		{append(base, "stray.csv"), `unexpected argument "stray.csv"`},
		{append(base, "--alpha", "0.5"), "--alpha 0.5: must be between 0 and 0.5"},
		{append(base, "--alpha", "0"), "--alpha 0: must be between 0 and 0.5"},
		{append(base, "--alpha", "ten"), `--alpha "ten": not a number`},
		{append(base, "--blocks", "interval"), "--blocks interval needs --block-length K"},
		{append(base, "--block-length", "3"), "--block-length applies to interval and nested blocks"},
		{append(base, "--blocks", "nested", "--block-length", "0"), "--block-length 0: must be at least 1"},
		{append(base, "--blocks", "windows"), `--blocks "windows": choose sequence, interval or nested`},
		{append(base, "--low", "10", "--high", "4"), "--low 10 must be below --high 4"},
		{append(base, "--low", "4", "--high", "4"), "--low 4 must be below --high 4"},
		{append(base, "--low", "NaN"), `--low "NaN": not a finite number`},
		{append(base, "--layout", "sideways"), `--layout "sideways": choose auto, batch-first or time-first`},
		{append(base, "--solver", "newton"), `--solver "newton": choose auto, exact, dual, lowrank, cg or lissa`},
		{append(base, "--curvature", "fisher"), `--curvature "fisher": choose hessian or gauss-newton`},
		{append(base, "--damping", "0"), "--damping 0: must be positive"},
		{append(base, "--damping", "-1"), "--damping -1: must be positive"},
		{append(base, "--loss", "hinge"), `--loss "hinge": choose squared-error, bce`},
		{append(base, "--ridge", "-2"), "--ridge -2: must be zero or positive"},
		{append(base, "--calibration-pool", "-1"), "--calibration-pool -1: give the number of calibration values"},
		{append(base, "--retrain", "-5"), "--retrain -5"},
		{append(base, "--retrain", "two"), `--retrain "two": not a whole number`},
		{append(base, "--out", "report.pdf"), "--out report.pdf: the extension must be .html, .md, .json or .csv"},
		{append(base, "--out", "r.json", "--json", "r.json"), "--json r.json: the file is already written by --out"},
		{append(base, "--out", exTrain+".md", "--out", exTrain+".md"), "the file is already written"},
		{append(base, "--json", exTrain), "--json " + exTrain + " is the same file as --data " + exTrain},
		{append(base, "--target", ""), "cannot be empty"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", tc.args, code, errs)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errs, tc.want)
		}
		if out != "" {
			t.Errorf("%q: stdout %q", tc.args, out)
		}
		oneMessage(t, tc.args, errs, 1)
	}
}

// TestRuntimeErrors: problems with the files exit 1 with a clear message.
func TestRuntimeErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := readRows(t, exTrain)
	// A second feature column: the model takes one feature.
	wide := make([][]string, len(rows))
	for i, r := range rows {
		extra := "0.5"
		if i == 0 {
			extra = "z"
		}
		wide[i] = append(slices.Clone(r[:3]), extra, r[3])
	}
	widePath := writeCSV(t, dir, "wide.csv", wide)
	// The test file names its feature differently.
	renamed := slices.Clone(rows)
	renamed[0] = []string{"id", "t", "x2", "y"}
	renamedPath := writeCSV(t, dir, "renamed.csv", renamed)
	// A bad value on line 4 and an empty one on line 6.
	bad := slices.Clone(rows[:8])
	bad[3] = []string{"1", "3", "abc", "1"}
	bad[5] = []string{"1", "5", "", "1"}
	badPath := writeCSV(t, dir, "bad.csv", bad)
	notModel := writeCSV(t, dir, "model.onnx", [][]string{{"not", "a", "model"}})

	for _, tc := range []struct {
		args  []string
		want  string
		lines int
	}{
		{[]string{"--model", filepath.Join(dir, "none.onnx"), "--data", exTrain}, "--model " + filepath.Join(dir, "none.onnx") + ": no such file or directory", 1},
		{[]string{"--model", exModel, "--data", filepath.Join(dir, "none.csv")}, "none.csv: no such file or directory", 1},
		{[]string{"--model", exModel, "--data", exTrain, "--test", filepath.Join(dir, "none.csv")}, "--test " + filepath.Join(dir, "none.csv") + ": no such file", 1},
		{[]string{"--model", exModel, "--data", dir}, "is a directory", 1},
		{[]string{"--model", exModel, "--data", exTrain, "--out", filepath.Join(dir, "no", "such", "r.html")}, "cannot write " + filepath.Join(dir, "no", "such", "r.html"), 1},
		{[]string{"--model", notModel, "--data", exTrain}, "not a valid ONNX model", 1},
		{[]string{"--model", exModel, "--data", widePath}, "the model takes 1 feature, the file has 2 feature columns (x, z): choose the feature columns (--features)", 1},
		{[]string{"--model", exModel, "--data", exTrain, "--test", renamedPath}, "x2", 1},
		{[]string{"--model", exModel, "--data", exTrain, "--id-col", "patient"}, `column "patient": no such column; the file has id, t, x, y: name the id column (--id-col)`, 1},
		{[]string{"--model", exModel, "--data", exTrain, "--time-col", "day"}, "name the step column (--time-col)", 1},
		{[]string{"--model", exModel, "--data", exTrain, "--features", "w"}, "--features", 1},
		{[]string{"--model", exModel, "--data", badPath}, "2 problems:", 3},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != 1 {
			t.Errorf("%q: exit %d, want 1 (stderr %q)", tc.args, code, errs)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errs, tc.want)
		}
		if out != "" {
			t.Errorf("%q: stdout %q", tc.args, out)
		}
		oneMessage(t, tc.args, errs, tc.lines)
	}
}

// scriptCSV rewrites the example data with markup in the ids and the
// column names.
func scriptCSV(t *testing.T, dir, name, src string) string {
	rows := readRows(t, src)
	rows[0] = []string{"<script>alert('id')</script>", "t", `<img src=x onerror=alert(1)>`, "<b>glucose</b>"}
	for _, r := range rows[1:] {
		r[0] = `<script>alert("` + r[0] + `")</script>`
	}
	return writeCSV(t, dir, name, rows)
}

// TestAuditEscapes runs an audit whose ids and column names hold markup:
// the reports show it as text.
func TestAuditEscapes(t *testing.T) {
	dir := t.TempDir()
	train := scriptCSV(t, dir, "train.csv", exTrain)
	test := scriptCSV(t, dir, "test.csv", exTest)
	html, md, js := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.md"), filepath.Join(dir, "r.json")
	code, _, errs := runCmd("--model", exModel, "--data", train, "--test", test,
		"--id-col", "<script>alert('id')</script>", "--target", "<b>glucose</b>", "--features", `<img src=x onerror=alert(1)>`,
		"--low", "0", "--out", html, "--out", md, "--out", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, path := range []string{html, md} {
		text := readFile(t, path)
		for _, bad := range []string{"<script", "<img", "<b>"} {
			if i := strings.Index(text, bad); i >= 0 {
				t.Errorf("%s: unescaped %q: …%s…", filepath.Base(path), bad, text[max(0, i-80):min(len(text), i+80)])
			}
		}
		if !strings.Contains(text, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the ids as text", filepath.Base(path))
		}
	}
	svgs, _ := filepath.Glob(filepath.Join(dir, "r_files", "*.svg"))
	for _, s := range svgs {
		if strings.Contains(readFile(t, s), "<b>") {
			t.Errorf("%s: unescaped column name", s)
		}
	}
	doc := readJSON(t, js)
	id := doc["sequences"].([]any)[0].(map[string]any)["id"]
	if id != `<script>alert("1")</script>` {
		t.Errorf("JSON id %q", id)
	}
	if got := doc["settings"].(map[string]any)["columns"].(map[string]any)["target"]; got != "<b>glucose</b>" {
		t.Errorf("JSON target column %q", got)
	}
}
