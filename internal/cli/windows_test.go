package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// winDir holds a many-to-one RNN trained on the windows of 6 rows of one
// series (audit/testdata/windows/make.py) and that series.
var winDir = filepath.Join("..", "..", "audit", "testdata", "windows")

// TestWindowFlags: --window audits the series with window blocks and the
// summary says how they were cut and how long the blocks are; bad
// combinations are usage errors that name the flags.
func TestWindowFlags(t *testing.T) {
	t.Parallel()
	base := []string{"--model", filepath.Join(winDir, "model.onnx"), "--data", filepath.Join(winDir, "train.csv"),
		"--test", filepath.Join(winDir, "test.csv"), "--features", "y", "--shift", "1", "--ridge", "0.104"}
	code, out, errs := runCmd(append(base, "--window", "6", "--block-length", "4")...)
	if code != 0 || !strings.Contains(out, "Windows: 104 windows of 6 rows, stride 1, cut from 1 series of") || !strings.Contains(out, "stretch of 4 rows") {
		t.Errorf("--window 6: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--window", "0"}, "--window 0: the number of rows the model reads per window must be at least 1"},
		{[]string{"--window", "6", "--blocks", "interval"}, "--window 6 uses window blocks: drop --blocks"},
		{[]string{"--window", "6", "--block-length", "0"}, "--block-length 0: must be at least 1"},
		{[]string{"--window", "200"}, "no series of"},
	} {
		code, out, errs := runCmd(append(base, tc.args...)...)
		if code == 0 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want an error with %q", tc.args, code, out, errs, tc.want)
		}
	}
	// A model with one output per step reads the series whole.
	code, out, errs = runCmd("--model", exModel, "--data", exTrain, "--window", "5")
	if want := `audit: windows of 5 rows are cut for a many-to-one model, and output "y" forecasts at every step: audit the long series without a window (--window)`; code != 1 || out != "" || strings.TrimSpace(errs) != want {
		t.Errorf("per-step model: exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
	}
}

// TestWindowedNotice: the same series given as windows (one sequence per
// window, the next value as every row's target) draws a warning naming
// the evidence and the command that audits the series; that command, run
// with the series file in place, audits with window blocks.
func TestWindowedNotice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	series := readRows(t, filepath.Join(winDir, "train.csv"))[1:]
	rows := [][]string{{"id", "t", "y", "next"}}
	for lo := 0; lo+6 < len(series); lo++ {
		for k := range 6 {
			r := series[lo+k]
			rows = append(rows, []string{"w" + strconv.Itoa(lo+1), r[1], r[2], series[lo+k+1][2]})
		}
	}
	data := writeCSV(t, dir, "win.csv", rows)
	model := filepath.Join(winDir, "model.onnx")
	code, _, errs := runCmd("--model", model, "--data", data, "--features", "y", "--target", "next", "--ridge", "0.104", "--out", filepath.Join(dir, "r.md"))
	cmd := "audit --model " + model + " --data " + filepath.Join(dir, "win_series.csv") + " --features y --target y --shift 1 --window 6"
	if code != 0 || !strings.Contains(errs, "audit: warning: "+data+" looks like overlapping windows of longer series, not independent sequences: 103 of 104 sequences repeat the rows of the sequence before them") ||
		!strings.Contains(errs, "(columns id, t and y), and let the audit cut the windows and leave out stretches of time: "+cmd+"\n") {
		t.Fatalf("exit %d, stderr %q; want the warning ending in %q", code, errs, cmd)
	}
	if md := readFile(t, filepath.Join(dir, "r.md")); !strings.Contains(md, "looks like overlapping windows") {
		t.Errorf("the report does not carry the warning")
	}
	if err := os.WriteFile(filepath.Join(dir, "win_series.csv"), []byte(readFile(t, filepath.Join(winDir, "train.csv"))), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(append(strings.Fields(cmd)[1:], "--ridge", "0.104")...)
	if code != 0 || !strings.Contains(out, "Windows: 104 windows of 6 rows") || strings.Contains(errs, "warning") {
		t.Errorf("the suggested command: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
