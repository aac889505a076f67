package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFanChartsFlag: --fan-charts chooses the fan charts of audit's and
// predict's reports; a malformed value or an id the evaluated data lack
// is a usage error naming the flag, given before any work.
func TestFanChartsFlag(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "r.md")
	base := []string{"--model", exModel, "--data", exTrain, "--test", exTest, "--ridge", "10", "--quiet", "--damping-sensitivity=false"}
	if code, _, errs := runCmd(append(base, "--fan-charts", "7, 3", "--out", md)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "### Sequence 7\n") || !strings.Contains(string(page), "### Sequence 3\n") ||
		strings.Count(string(page), "### Sequence ") != 2 || !strings.Contains(string(page), "### Per step") {
		t.Errorf("the report's sequences: %q", strings.Join(grepLines(string(page), "### "), "; "))
	}
	if _, err := os.Stat(filepath.Join(dir, "r_files", "fan-3.svg")); err == nil {
		t.Error("a third fan chart was written")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(base, "--fan-charts", "first:0"), `--fan-charts first:0: "0" is not a positive whole number`},
		{append(base, "--fan-charts", "3,nope"), `--fan-charts: no evaluated sequence has the id "nope" (the evaluated ids begin 1, 2, 3, 4, 5) in ` + exTest},
		{[]string{"--model", exModel, "--data", exTrain, "--ridge", "10", "--fan-charts", "x1"}, `no evaluated sequence has the id "x1"`},
	} {
		code, _, errs := runCmd(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", tc.args[len(tc.args)-2:], code, errs, tc.want)
		}
	}
	// predict.
	art, err := fitSmall()
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "p.html")
	if code, _, errs := runCmd("predict", "--load", art, "--data", exTest, "--fan-charts", "none", "--out", html, "--quiet"); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(html); strings.Contains(string(b), `id="chart-fan-`) || !strings.Contains(string(b), `id="table-steps"`) {
		t.Error("predict --fan-charts none: the page has fan charts, or no per-step table")
	}
	if code, _, errs := runCmd("predict", "--load", art, "--data", exTest, "--fan-charts", "nope"); code != 2 || !strings.Contains(errs, `--fan-charts: no evaluated sequence has the id "nope"`) {
		t.Errorf("predict with an unknown id: exit %d, %s", code, errs)
	}
	if code, _, errs := runCmd("predict", "--load", art, "--data", exTest, "--fan-charts", "first:"); code != 2 || !strings.Contains(errs, "--fan-charts first:") {
		t.Errorf("predict with a malformed value: exit %d, %s", code, errs)
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
