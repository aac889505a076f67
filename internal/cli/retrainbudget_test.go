package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRetrainBudgetReport: with a re-training budget too small to start
// any block re-fit, the JSON report counts the three outcomes apart (0
// converged, 0 not converged, 3 not run with 0 iterations) and the Markdown
// report says the re-fits were not run, not that they hit the iteration
// cap.
func TestRetrainBudgetReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	train := writeCSV(t, dir, "train.csv", readRows(t, exTrain)[:1+200]) // 20 sequences
	js, txt := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	args := []string{"--model", exModel, "--data", train, "--retrain", "3", "--retrain-budget", "1ns", "--out", js, "--out", txt}
	if code, _, errs := runCmd(args...); code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, errs)
	}
	var r struct {
		Retrain struct {
			Outcomes     []string `json:"outcomes"`
			Iterations   []int    `json:"iterations"`
			NotConverged int      `json:"not_converged"`
			NotRun       int      `json:"not_run"`
		} `json:"retrain"`
	}
	if err := json.Unmarshal([]byte(readFile(t, js)), &r); err != nil {
		t.Fatal(err)
	}
	rt := r.Retrain
	if rt.NotRun != 3 || rt.NotConverged != 0 || !slices.Equal(rt.Iterations, []int{0, 0, 0}) ||
		!slices.Equal(rt.Outcomes, []string{"not run (budget)", "not run (budget)", "not run (budget)"}) {
		t.Errorf("retrain: %+v, want 3 not run with 0 iterations", rt)
	}
	text := readFile(t, txt)
	for _, want := range []string{"3 of 3 exact re-fits were not run: the time budget", "0 / 0 / 3"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text report lacks %q", want)
		}
	}
	if strings.Contains(text, "did not converge (iteration cap") {
		t.Errorf("the text report says re-fits that never ran hit the iteration cap")
	}
}
