package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// adaptiveFixture is the fixture with adaptive intervals: two kinds and
// the limits of the first step (an unbounded ACI upper limit).
func adaptiveFixture() *audit.Result {
	r := fixture()
	r.Adaptive = &adaptive.Result{Base: adaptive.BaseSplit, Pooled: true, Source: "window", Window: 250, Gamma: 0.005, Grid: []float64{0.01, 0.1},
		Rho: 0.99, RollingWindow: 250, Chains: 1, Longest: 300,
		Kinds: []adaptive.Kind{
			{KindSummary: interval.KindSummary{Kind: adaptive.KindACI, Coverage: 0.9, MeanLength: 2}, WorstWindow: 0.84, Windows: 1, Bound: 0.6, Guarantee: "long-run"},
			{KindSummary: interval.KindSummary{Kind: adaptive.KindAgACI, Coverage: 0.91, MeanLength: 2.1}, WorstWindow: math.NaN(), Bound: math.NaN(), Guarantee: "none",
				Under: []adaptive.SeriesUnder{{ID: "SMI", Points: 371, Coverage: 0.868, Tolerance: 0.025, Early: 0.92, Late: 0.8, Drift: true}}},
		},
		Notes: []string{"a note"}}
	r.Sequences[0].Steps[0].Adaptive = &adaptive.Step{Alpha: 0.095, ACILower: 1, ACIUpper: math.Inf(1), AgACILower: 1, AgACIUpper: 3,
		NexCPLower: 1.5, NexCPUpper: 2.5, RollingLower: 1.2, RollingUpper: 2.8}
	return r
}

// TestAdaptiveReports checks the adaptive section of the JSON (values,
// null for an unbounded limit and a NaN, the step fields), the CSV's
// columns, and the table in Markdown, HTML and the terminal summary.
func TestAdaptiveReports(t *testing.T) {
	r := adaptiveFixture()
	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Adaptive struct {
			Source string
			Window int
			Grid   []float64
			Kinds  []struct {
				Kind        string
				Coverage    float64
				WorstWindow *float64 `json:"worst_window"`
				Bound       *float64
				Under       []struct {
					ID    string
					Drift bool
					Late  float64 `json:"late_coverage"`
				} `json:"under_covering"`
			}
		}
		Sequences []struct {
			Steps []map[string]any
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	a := doc.Adaptive
	if a.Source != "window" || a.Window != 250 || len(a.Grid) != 2 || len(a.Kinds) != 2 || a.Kinds[0].Kind != "aci" || *a.Kinds[0].WorstWindow != 0.84 || a.Kinds[1].WorstWindow != nil || a.Kinds[1].Bound != nil ||
		len(a.Kinds[0].Under) != 0 || len(a.Kinds[1].Under) != 1 || a.Kinds[1].Under[0].ID != "SMI" || !a.Kinds[1].Under[0].Drift || a.Kinds[1].Under[0].Late != 0.8 {
		t.Fatalf("adaptive section %+v", a)
	}
	st := doc.Sequences[0].Steps[0]
	if v, ok := st["aci_upper"]; !ok || v != nil || st["aci_alpha"] != 0.095 || st["agaci_upper"] != 3.0 || st["rolling_lower"] != 1.2 {
		t.Errorf("first step %v", st)
	}
	if _, ok := doc.Sequences[0].Steps[1]["aci_lower"]; ok {
		t.Errorf("a step without adaptive limits has them: %v", doc.Sequences[0].Steps[1])
	}
	plain := fixture()
	b.Reset()
	if err := WriteJSON(&b, plain, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "adaptive") || strings.Contains(b.String(), "aci_") {
		t.Error("JSON of a result without adaptive intervals mentions them")
	}

	var md bytes.Buffer
	if _, err := WriteMarkdown(&md, r, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Intervals over time", "| ACI | 90.0% | 84.0% |", "| AgACI | 91.0% | n/a |", "the series' own last 250 labelled forecasts", "- a note",
		"AgACI under-covers on SMI: 86.8% of 371 forecasts, below 90% by more than its tolerance ±2.5 points; its coverage drifts from 92.0% in the first third to 80.0% in the last"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="over-time">`, `<a href="#over-time">`, "<td>AgACI</td>"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	var c bytes.Buffer
	if err := WriteCSV(&c, r, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for name, want := range map[string]string{"aci_alpha": "0.095", "aci_upper": "+Inf", "agaci_upper": "3", "nexcp_lower": "1.5", "rolling_upper": "2.8"} {
		if got := recs[1][col[name]]; got != want {
			t.Errorf("CSV %s %q, want %q", name, got, want)
		}
	}
	if got := recs[2][col["aci_lower"]]; got != "" {
		t.Errorf("CSV aci_lower of a step without adaptive limits %q, want empty", got)
	}
	var sum bytes.Buffer
	if err := WriteSummary(&sum, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "Over time: ACI 90.0% (worst window 84.0%, width 2, median width 0, 0 unbounded)") {
		t.Errorf("summary %q lacks the adaptive line", sum.String())
	}
}
