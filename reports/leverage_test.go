package reports

import (
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
)

// TestLeverageReported: the Newton estimator's leverage per step is drawn
// beside coverage, and its warnings (high leverage at some steps, an
// unbounded block, re-fits not converged) are put into words with their
// figures.
func TestLeverageReported(t *testing.T) {
	r := fixture()
	r.Setting.Estimator, r.Setting.Curvature = "newton", "gauss-newton"
	r.Diag.LeveragePerStep = []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.45}
	r.Diag.UnboundedBlocks, r.Diag.UnboundedLabels = 1, []string{"sequence 3 (id P003)"}
	r.Diag.Warnings = []audit.Warning{
		{Code: audit.HighLeverage, Step: 4, Figure: 0.3, Bound: audit.HighLeverageBound},
		{Code: audit.UnboundedBlocks, Step: -1, Figure: 0.9995, Bound: 1e-3, Count: 1}, // the audit's leverage limit
		{Code: audit.HighLeverage, Step: 5, Figure: 0.45, Bound: audit.HighLeverageBound},
		{Code: audit.RefitNotConverged, Step: -1, Figure: 10, Bound: 120, Count: 2, Ratio: 200},
	}
	set := charts(r, &Options{})
	found := false
	for _, c := range set[groupCoverage] {
		if c.ID == "leverage" && strings.Contains(string(c.SVG), "<svg") {
			found = true
		}
	}
	if !found {
		t.Error("no leverage chart in the coverage group")
	}
	ws := warnings(r)
	if len(ws) != 3 {
		t.Fatalf("%d warnings, want 3 (the two high-leverage steps joined): %q", len(ws), ws)
	}
	for _, w := range jsonDiagOf(r).Warnings {
		if w.Code == string(audit.HighLeverage) && !strings.Contains(w.Message, "leverage is high at some steps (mean step") {
			t.Errorf("JSON message of a high-leverage warning: %q", w.Message)
		}
	}
	for i, want := range []string{"step 5: 0.30, step 6: 0.45", "sequence 3 (id P003)", "2 of 10 exact re-fits did not converge (iteration cap 200, time budget 120s)"} {
		if !strings.Contains(ws[i], want) {
			t.Errorf("warning %d %q lacks %q", i, ws[i], want)
		}
	}
}

// TestRefinementReported: the low-rank path's refinement counts appear in
// the JSON diagnostics (absent when zero) and as a row of the diagnostics
// table with the blocks left by the budget.
func TestRefinementReported(t *testing.T) {
	r := fixture()
	if d := jsonDiagOf(r); d.RefinedBlocks != 0 || d.RefineSkipped != 0 || d.RefineProducts != 0 {
		t.Fatalf("refinement fields %+v without a refinement", d)
	}
	for _, row := range diagRows(r) {
		if strings.Contains(row.Key, "refined") {
			t.Fatalf("a refinement row without a refinement: %q", row)
		}
	}
	r.Diag.RefinedBlocks, r.Diag.RefineSkipped, r.Diag.RefineProducts, r.Diag.UnboundedBlocks = 12, 3, 2345, 1
	d := jsonDiagOf(r)
	if d.RefinedBlocks != 12 || d.RefineSkipped != 3 || d.RefineProducts != 2345 {
		t.Errorf("JSON refinement fields %d, %d, %d; want 12, 3, 2345", d.RefinedBlocks, d.RefineSkipped, d.RefineProducts)
	}
	found := false
	for _, row := range diagRows(r) {
		if strings.Contains(row.Key, "refined") {
			found = true
			for _, want := range []string{"12 blocks re-solved", "2,345 curvature products", "1 unbounded after", "3 blocks left at the low-rank values"} {
				if !strings.Contains(row.Value, want) {
					t.Errorf("refinement row %q lacks %q", row.Value, want)
				}
			}
		}
	}
	if !found {
		t.Error("no refinement row in the diagnostics table")
	}
}
