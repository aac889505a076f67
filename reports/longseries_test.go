package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
)

// TestOverTimeWords: a result whose coverage drifts over long series
// gets the section "Coverage over time" (its chart, the table naming the
// sequence that under-covers and how its coverage drifts), the drift warning with its figures and
// what it means for the guarantees, the over_time JSON, and no "every
// step covered" figure.
func TestOverTimeWords(t *testing.T) {
	r := fixture()
	o := &adaptive.OverTime{Window: 10, Lag: 5, Long: true, Inflation: 2.5, EffectivePoints: 6.4, Tolerance: 0.237,
		Pooled: []adaptive.RollingPoint{{Step: 10, Coverage: 0.9}, {Step: 11, Coverage: 0.7}}, Worst: 0.7,
		Early: 0.95, Late: 0.6, EarlyPoints: 40, LatePoints: 40, DriftTolerance: 0.15, Autocorrelation: 0.4, AutocorrPairs: 100,
		Sequences: []adaptive.SequenceCoverage{
			{ID: "DAX", Points: 60, Coverage: 0.92, Worst: 0.8, Tolerance: 0.1, Rolling: []adaptive.RollingPoint{{Step: 10, Coverage: 0.9}, {Step: 11, Coverage: 0.8}}},
			{ID: "FTSE", Points: 60, Coverage: 0.55, Worst: 0.3, Tolerance: 0.1, Under: true, Early: 0.8, Late: 0.3, Drift: true, Rolling: []adaptive.RollingPoint{{Step: 10, Coverage: 0.6}, {Step: 11, Coverage: 0.3}}},
		}}
	r.Summary.OverTime = o
	r.Diag.Warnings = append(r.Diag.Warnings, audit.Warning{Code: audit.CoverageDrift, Step: -1, Figure: 0.6, Bound: 0.95, Ratio: 0.15, Count: 80})
	r.Verdict = audit.Judge(r)
	var md bytes.Buffer
	files, err := WriteMarkdown(&md, r, "f", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := md.String()
	for _, want := range []string{
		"## Coverage over time",
		"count as 6.4 independent values of 16, and the sampling tolerance is ±23.7 points (the verdict uses it)",
		"| FTSE | 60 | 55.0% | 30.0% | ±10.0 | yes: below 90% by more than its tolerance; coverage drifts from 80.0% in its first third to 30.0% in its last: its test period is not exchangeable with the training period |",
		"| DAX | 60 | 92.0% | 80.0% | ±10.0 | no |",
		"Coverage drifts along time: it falls from 95.0% in the first third of the test steps to 60.0% in the last third (80 values",
		"The jackknife+ guarantee (and split conformal",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(got, "every step covered") {
		t.Error("markdown gives 'every step covered' over long series")
	}
	found := false
	for _, f := range files {
		found = found || strings.HasSuffix(f.Name, "rolling-coverage.svg")
	}
	if !found {
		t.Error("no rolling-coverage chart")
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			OverTime struct {
				Tolerance float64 `json:"tolerance"`
				Sequences []struct {
					ID    string  `json:"id"`
					Under bool    `json:"under_covers"`
					Drift bool    `json:"drift"`
					Late  float64 `json:"late_coverage"`
				} `json:"sequences"`
			} `json:"over_time"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if ot := doc.Summary.OverTime; ot.Tolerance != 0.237 || len(ot.Sequences) != 2 || !ot.Sequences[1].Under || !ot.Sequences[1].Drift || ot.Sequences[1].Late != 0.3 || ot.Sequences[0].Drift {
		t.Errorf("JSON over_time %+v", ot)
	}
}
