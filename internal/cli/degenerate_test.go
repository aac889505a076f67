package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDegenerateBlocks: the command refuses a block scheme whose every
// block deletes the whole training set, naming the flag to change; interval
// blocks longer than every sequence fall back to sequence blocks, which the
// terminal and the report say.
func TestDegenerateBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := readRows(t, exTrain)
	one := writeCSV(t, dir, "one.csv", rows[:1+10])   // one sequence of 10 steps
	four := writeCSV(t, dir, "four.csv", rows[:1+40]) // four sequences
	for _, tc := range []struct {
		args  []string
		want  string
		lines int // the refusal, after the note on the fallback to sequence blocks
	}{
		{[]string{"--data", one, "--blocks", "nested", "--block-length", "3"},
			"nested blocks on a single training sequence (" + one + " has one sequence with targets): every block would delete the whole training set; use interval blocks, which split that sequence into intervals (--blocks)", 1},
		{[]string{"--data", one, "--blocks", "interval", "--block-length", "10"},
			"choose a block length of at most half the sequence (--block-length)", 2},
	} {
		args := append([]string{"--model", exModel}, tc.args...)
		code, out, errs := runCmd(args...)
		if code != 1 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errs, tc.want)
		}
		oneMessage(t, args, errs, tc.lines)
	}

	args := []string{"--model", exModel, "--data", four, "--blocks", "interval", "--block-length", "50", "--out", filepath.Join(dir, "r.md")}
	code, _, errs := runCmd(args...)
	want := "audit: note: --block-length 50 leaves fewer than two intervals that hold a target" // said by the hostile branch's check
	if code != 0 || !strings.Contains(errs, want) {
		t.Errorf("%q: exit %d, stderr %q; want exit 0 and %q", args, code, errs, want)
	}
	if md := readFile(t, filepath.Join(dir, "r.md")); !strings.Contains(md, "sequence blocks are used instead") {
		t.Errorf("the report does not say that sequence blocks were used")
	}
}
