package reports

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// kindOf is a kind with the same coverage at each of 10 steps (steps
// overrides some), 200 sequences.
func kindOf(kind string, cov, width float64, steps map[int]float64) interval.KindSummary {
	k := interval.KindSummary{Kind: kind, Coverage: cov, JointCoverage: 0.3, Sequences: 200, MeanLength: width,
		CoveragePerStep: slices.Repeat([]float64{cov}, 10), LengthPerStep: slices.Repeat([]float64{width}, 10), IntervalScore: width + 1}
	for t, c := range steps {
		k.CoveragePerStep[t] = c
	}
	return k
}

// calFig is a kind at the calibration values: 200 values at each of 10
// steps, the same coverage at each (steps overrides some).
func calFig(kind string, guaranteed bool, cov, width float64, unbounded int, steps map[int]float64) interval.CalibrationFigures {
	f := interval.CalibrationFigures{Kind: kind, Guaranteed: guaranteed, Coverage: cov, Values: 2000, MeanWidth: width, Unbounded: unbounded,
		CoveragePerStep: slices.Repeat([]float64{cov}, 10), ValuesPerStep: slices.Repeat([]int{200}, 10)}
	for t, c := range steps {
		f.CoveragePerStep[t] = c
	}
	return f
}

// calibrated is a result of 2,000 test values in 200 sequences of 10
// steps, with 200 calibration values per step, the kinds at the
// calibration values figs and on the test values kinds, and the audit's
// recommendation.
func calibrated(figs []interval.CalibrationFigures, kinds ...interval.KindSummary) *audit.Result {
	r := &audit.Result{
		Setting: audit.Setting{Alpha: 0.1, NominalCover: 0.9, GuaranteedMin: 0.8},
		Summary: &audit.Summary{Alpha: 0.1, Points: 2000, PointsPerStep: slices.Repeat([]int{200}, 10),
			CoveragePerStep: make([]float64, 10)},
		Conformal: &audit.Conformal{File: "cal.csv", Sequences: 200, Values: 2000, Kinds: kinds, Calibrated: figs},
	}
	for t := range 10 {
		r.Conformal.Forecasts = append(r.Conformal.Forecasts, interval.ConformalForecast{Row: t, M: 200, HalfWidth: 1, Scale: 1.1})
	}
	r.Conformal.Recommendation = audit.Recommend(r.Conformal, r.Summary) // as audit.Run does
	return r
}

// TestRecommendation checks the choice on the calibration values and its
// check on the test values against thresholds worked out by hand.
// Calibration, jackknife+ (2,000 values, 200 per step): pooled 0.9 - 2
// sqrt(0.09/2000) = 0.8866, a step 0.9 - 3 sqrt(0.09/200) = 0.8364; the
// calibrated kinds hold by construction. Test: pooled 0.8866; a
// calibrated kind's step (200 test, 200 calibration values) 0.9 - 3
// sqrt(0.09 (1/200 + 1/201)) = 0.8100; another kind's step 0.8364; joint
// (200 sequences) 0.9 - 2 sqrt(0.09/200) = 0.8576.
func TestRecommendation(t *testing.T) {
	t.Parallel()
	jk := kindOf(interval.KindJackknife, 0.85, 2.2, nil)
	cj := kindOf(interval.KindConformalJackknife, 0.9, 2.0, nil)
	bon := kindOf(interval.KindBonferroni, 0.99, 4, nil)
	bon.JointCoverage = 0.93
	ins := kindOf(interval.KindInSample, 0.91, 1.5, nil) // narrowest and covering, but not eligible
	cjCal := calFig(interval.KindConformalJackknife, true, 0.9, 2.0, 0, nil)
	splitCal := calFig(interval.KindSplit, true, 0.9, 1.9, 0, nil)
	for _, tc := range []struct {
		name  string
		figs  []interval.CalibrationFigures
		kinds []interval.KindSummary
		want  string
		text  []string
	}{
		{"jackknife+ short at a step on calibration; split fails its test check",
			[]interval.CalibrationFigures{calFig(interval.KindJackknife, false, 0.9, 1.8, 0, map[int]float64{9: 0.83}), cjCal, splitCal},
			[]interval.KindSummary{jk, cj, kindOf(interval.KindSplit, 0.905, 1.9, map[int]float64{2: 0.80}), bon, ins},
			interval.KindSplit, []string{"Use split conformal, chosen on the 2,000 calibration values: its coverage there holds by construction",
				"narrowest of the kinds that hold (conformalized jackknife+ 2)", "Short of the target: jackknife+ (calibration coverage 83.0% at step 10).",
				"it falls short (90.5% of 2,000 values; coverage 80.0% at step 3)", "Short of the target on the test data: jackknife+ (coverage 85.0%).",
				"use the Bonferroni intervals: joint coverage 93.0%"}},
		{"jackknife+ within its step tolerance on calibration",
			[]interval.CalibrationFigures{calFig(interval.KindJackknife, false, 0.9, 1.8, 0, map[int]float64{9: 0.84}), cjCal, splitCal},
			[]interval.KindSummary{kindOf(interval.KindJackknife, 0.9, 1.8, map[int]float64{9: 0.84}), cj, bon, ins},
			interval.KindJackknife, []string{"Use jackknife+, chosen on the 2,000 calibration values: its coverage there holds (90.0%, target 90%; guaranteed at least 80% with exact re-training)",
				"its coverage holds (90.0% of 2,000 values, mean width 1.8)"}},
		{"pooled just short on calibration",
			[]interval.CalibrationFigures{calFig(interval.KindJackknife, false, 0.886, 1.8, 0, nil), cjCal},
			[]interval.KindSummary{kindOf(interval.KindJackknife, 0.95, 1.8, nil), cj},
			interval.KindConformalJackknife, []string{"jackknife+ (calibration coverage 88.6%)"}},
		{"fewer unbounded first",
			[]interval.CalibrationFigures{calFig(interval.KindJackknife, false, 0.8, 1.8, 0, nil), cjCal, calFig(interval.KindSplit, true, 0.9, 1.5, 10, nil)},
			nil, interval.KindConformalJackknife, []string{"(split conformal 1.5 (10 unbounded))"}},
		{"none holds",
			[]interval.CalibrationFigures{calFig(interval.KindJackknife, false, 0.85, 1.8, 0, nil), calFig(interval.KindSplit, true, 1, math.NaN(), 2000, nil)},
			[]interval.KindSummary{jk, ins},
			"", []string{"No kind of interval holds the 90% target on the 2,000 calibration values with a bounded interval: jackknife+ (calibration coverage 85.0%)."}},
	} {
		r := calibrated(tc.figs, tc.kinds...)
		got, text := recommendation(r)
		if got != tc.want {
			t.Errorf("%s: recommended %q, want %q (%s)", tc.name, got, tc.want, text)
		}
		for _, w := range tc.text {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.name, text, w)
			}
		}
	}
	// Bonferroni short of joint coverage is not offered.
	b2 := bon
	b2.JointCoverage = 0.85
	if _, text := recommendation(calibrated([]interval.CalibrationFigures{cjCal}, cj, b2)); strings.Contains(text, "Bonferroni") {
		t.Errorf("Bonferroni offered at joint coverage 85%%: %s", text)
	}
	// All-unbounded kinds are not recommended, and the text says why.
	unb := kindOf(interval.KindSplit, 1, math.NaN(), nil)
	unb.Infinite = 2000
	figs := []interval.CalibrationFigures{calFig(interval.KindJackknife, false, 0.9, 3, 0, nil), calFig(interval.KindSplit, true, 1, math.NaN(), 2000, nil)}
	if got, text := recommendation(calibrated(figs, jk, unb)); got != interval.KindJackknife || !strings.Contains(text, "Every split conformal interval is unbounded") {
		t.Errorf("with unbounded split conformal: %q, %s", got, text)
	}
}

// TestConformalReports renders a result with a calibration set: the JSON
// carries the comparison, the recommendation and every kind's limits at
// every step (null when unbounded); Markdown and HTML show the comparison
// and escape the calibration file's name.
func TestConformalReports(t *testing.T) {
	t.Parallel()
	r := fixture()
	inf := math.Inf(1)
	r.Conformal = &audit.Conformal{File: "cal<b>.csv", Sequences: 4, Values: 20,
		Kinds: []interval.KindSummary{kindOf(interval.KindJackknife, 0.875, 3.25, nil), kindOf(interval.KindSplit, 0.9, 3, nil)},
		Notes: []string{"few values"}}
	for t := range 6 {
		r.Conformal.Forecasts = append(r.Conformal.Forecasts, interval.ConformalForecast{Row: t, M: 4, HalfWidth: inf, Scale: inf, JackknifeCoverage: 0.75})
	}
	r.Conformal.Recommendation = audit.Recommend(r.Conformal, r.Summary)
	for i := range r.Sequences {
		for k := range r.Sequences[i].Steps {
			st := &r.Sequences[i].Steps[k]
			st.Conformal = &interval.StepConformal{SplitLower: st.Prediction - 1, SplitUpper: st.Prediction + 1,
				BonferroniLower: math.Inf(-1), BonferroniUpper: inf, JackknifeLower: st.Lower, JackknifeUpper: st.Upper, M: 4}
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   int
		Conformal struct {
			File           string
			Kinds          []map[string]any
			Forecasts      []map[string]any
			Recommendation map[string]any
			Notes          []string
		}
		Sequences []struct{ Steps []map[string]any }
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Conformal
	if doc.Version != 3 || c.File != "cal<b>.csv" || len(c.Kinds) != 2 || len(c.Forecasts) != 6 || c.Forecasts[0]["half_width"] != nil || c.Notes[0] != "few values" {
		t.Errorf("conformal %+v", c)
	}
	if _, ok := c.Kinds[1]["coverage_holds"].(bool); c.Kinds[1]["kind"] != "split_conformal" || !ok || c.Kinds[0]["mean_length"] != 3.25 {
		t.Errorf("kinds %v", c.Kinds)
	}
	if _, ok := c.Recommendation["text"]; !ok {
		t.Errorf("recommendation %v", c.Recommendation)
	}
	step := doc.Sequences[0].Steps[0]
	for _, k := range []string{"split_lower", "split_upper", "bonferroni_lower", "bonferroni_upper", "conformal_jackknife_lower", "conformal_jackknife_upper", "m_calibration"} {
		v, ok := step[k]
		if !ok {
			t.Errorf("step lacks %s", k)
		}
		if strings.HasPrefix(k, "bonferroni") != (v == nil) {
			t.Errorf("step %s = %v", k, v)
		}
	}
	var md bytes.Buffer
	if _, err := WriteMarkdown(&md, r, "files", nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"## Interval kinds compared", "cal&lt;b&gt;.csv", "| jackknife+ |", "- Few values."} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("Markdown lacks %q", w)
		}
	}
	if strings.Contains(md.String(), "A held-out calibration set") {
		t.Error("Markdown gives the hint although there is a calibration set")
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "cal&lt;b&gt;.csv") || strings.Contains(html.String(), "cal<b>") {
		t.Error("the HTML report does not escape the calibration file name")
	}
}
