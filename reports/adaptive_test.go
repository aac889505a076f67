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

// TestAdaptiveFiniteReports checks the kinds that stay finite in every
// format: the recommendation marked, the unbounded share beside the
// count, the median and 90th-percentile widths and the interval score
// over every interval (null in JSON when infinite), and their CSV columns.
func TestAdaptiveFiniteReports(t *testing.T) {
	r := adaptiveFixture()
	a := r.Adaptive
	a.Kinds[0].Infinite, a.Kinds[0].Unbounded, a.Kinds[0].MedianWidth, a.Kinds[0].P90Width, a.Kinds[0].Winkler = 30, 0.1, 1.5, math.Inf(1), 4.25
	clipped := adaptive.Kind{KindSummary: interval.KindSummary{Kind: adaptive.KindACIClipped, Coverage: 0.9, MeanLength: 2.4}, WorstWindow: 0.84, Bound: 0.07,
		Guarantee: "restated", MedianWidth: 1.5, P90Width: 3.75, Winkler: 3.5}
	a.Kinds = append(a.Kinds, clipped)
	a.Recommended, a.RecommendedHolds, a.Penalty, a.Step, a.Clip = adaptive.KindACIClipped, true, 12, 0.1, 1.5
	st := r.Sequences[0].Steps[0].Adaptive
	st.ClippedAlpha, st.ClippedLower, st.ClippedUpper, st.Tracked, st.TrackingLower, st.TrackingUpper, st.PID, st.PIDLower, st.PIDUpper = 0.09, 1, 4.5, 0.75, 1.25, 2.75, -0.5, 2, 2
	st.PIDEmpty = true

	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Adaptive struct {
			Recommended string
			Penalty     float64 `json:"unbounded_width_penalty"`
			Kinds       []struct {
				Kind      string
				Unbounded float64  `json:"unbounded_share"`
				Median    *float64 `json:"median_width"`
				P90       *float64 `json:"p90_width"`
				Score     float64  `json:"interval_score_all"`
			}
		}
		Sequences []struct{ Steps []map[string]any }
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	k := doc.Adaptive.Kinds
	if doc.Adaptive.Recommended != adaptive.KindACIClipped || doc.Adaptive.Penalty != 12 || len(k) != 3 || k[0].Unbounded != 0.1 || *k[0].Median != 1.5 || k[0].P90 != nil ||
		k[0].Score != 4.25 || *k[2].P90 != 3.75 {
		t.Fatalf("adaptive section %+v", doc.Adaptive)
	}
	if s := doc.Sequences[0].Steps[0]; s["aci_clipped_upper"] != 4.5 || s["qt_quantile"] != 0.75 || s["pid_empty"] != true || s["pid_lower"] != 2.0 {
		t.Errorf("first step %v", s)
	}
	var md bytes.Buffer
	if _, err := WriteMarkdown(&md, r, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Interval | Coverage | Worst window | Unbounded | Median width | 90% width |", "| ACI | 90.0% | 84.0% | 30 (10.0%) | 1.5 | +∞ |",
		"| ACI clipped (recommended) | 90.0% | 84.0% | 0 | 1.5 | 3.75 |", "counted as 12 wide"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
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
	for name, want := range map[string]string{"aci_clipped_alpha": "0.09", "aci_clipped_upper": "4.5", "qt_lower": "1.25", "pid_quantile": "-0.5", "pid_upper": "2"} {
		if got := recs[1][col[name]]; got != want {
			t.Errorf("CSV %s %q, want %q", name, got, want)
		}
	}
	if got := recs[2][col["pid_upper"]]; got != "" || len(recs[2]) != len(recs[0]) {
		t.Errorf("CSV pid_upper of a step without adaptive limits %q (%d columns of %d), want empty", got, len(recs[2]), len(recs[0]))
	}
}
