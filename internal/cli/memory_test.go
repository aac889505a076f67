package cli

import (
	"strings"
	"testing"
)

// TestMemoryBudget: a budget the low-rank factor cannot fit in stops the
// audit before the curvature with one message naming --memory and
// --rank; a size that is not one is a usage error; a budget that fits
// runs.
func TestMemoryBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	train := writeCSV(t, dir, "train.csv", readRows(t, exTrain)[:1+200]) // 20 sequences
	base := []string{"--model", exModel, "--data", train, "--solver", "lowrank"}
	code, _, errs := runCmd(append(base, "--memory", "1K")...)
	if code == 0 || !strings.Contains(errs, "--memory") || !strings.Contains(errs, "--rank") || !strings.Contains(errs, "memory budget is 1 KiB") {
		t.Errorf("--memory 1K: exit %d, %q; want a failure naming --memory and --rank", code, errs)
	}
	if code, _, errs := runCmd(append(base, "--memory", "lots")...); code != 2 || !strings.Contains(errs, "--memory") {
		t.Errorf("--memory lots: exit %d, %q; want a usage error", code, errs)
	}
	if code, _, errs := runCmd(append(base, "--memory", "1G")...); code != 0 {
		t.Errorf("--memory 1G: exit %d: %s", code, errs)
	}
}
