package reports

import (
	"math"
	"strconv"
	"strings"

	"bytes"
	"encoding/csv"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// TestCSVNeutralisesFormulas: ids that a spreadsheet would evaluate (the
// OWASP CSV-injection payloads) are written with a quote in front and read
// back as that text; numbers and plain ids are written as they are.
func TestCSVNeutralisesFormulas(t *testing.T) {
	ids := map[string]string{
		"=1+1":                               "'=1+1",
		"+SUM(1+1)*cmd|' /C calc'!A0":        "'+SUM(1+1)*cmd|' /C calc'!A0",
		"-2+3+cmd|' /C calc'!A0":             "'-2+3+cmd|' /C calc'!A0",
		"@SUM(1+1)*cmd|' /C calc'!A0":        "'@SUM(1+1)*cmd|' /C calc'!A0",
		"=HYPERLINK(\"http://x\",\"click\")": "'=HYPERLINK(\"http://x\",\"click\")",
		"\t=1+1":                             "'\t=1+1",
		"\r=1+1":                             "'\r=1+1",
		"-3":                                 "-3",
		"+1.5e3":                             "+1.5e3",
		"chick 12":                           "chick 12",
		"a=b":                                "a=b",
	}
	r := fixture()
	seq := r.Sequences[0]
	r.Sequences = r.Sequences[:0]
	var order []string
	for id := range ids {
		s := seq
		s.ID = id
		r.Sequences = append(r.Sequences, s)
		order = append(order, id)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	i := 1
	for _, id := range order {
		for range seq.Steps {
			if got, want := recs[i][0], ids[id]; got != want {
				t.Errorf("id %q written as %q, want %q", id, got, want)
			}
			i++
		}
	}
}

// TestCSVColumns reads the CSV back by column name and checks every cell
// against the result's own fields: without a calibration set (calibrated
// columns empty, jackknife+ recommended) and with one (every kind, and
// the recommended kind's limits).
func TestCSVColumns(t *testing.T) {
	t.Parallel()
	plain := fixture()
	cal := fixture()
	cal.Conformal = &audit.Conformal{File: "cal.csv", Kinds: []interval.KindSummary{{Kind: interval.KindSplit}},
		Calibrated: []interval.CalibrationFigures{{Kind: interval.KindSplit, Guaranteed: true, Values: 10}},
		Recommendation: &audit.Recommendation{Kind: interval.KindSplit, Holds: []bool{true}, Short: make([]audit.Shortfall, 1),
			CalHolds: []bool{true}, CalShort: make([]audit.Shortfall, 1)}}
	for i := range cal.Sequences {
		for k := range cal.Sequences[i].Steps {
			st := &cal.Sequences[i].Steps[k]
			f := st.Prediction
			st.Conformal = &interval.StepConformal{SplitLower: f - 1 - 0.01*float64(k), SplitUpper: f + 1.25, BonferroniLower: f - 2, BonferroniUpper: math.Inf(1),
				JackknifeLower: f - 1.5, JackknifeUpper: f + 1.75 + 0.1*float64(i), M: 40 + k}
		}
	}
	for _, tc := range []struct {
		name string
		r    *audit.Result
		kind string
	}{{"plain", plain, interval.KindJackknife}, {"calibrated", cal, interval.KindSplit}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCSV(&b, tc.r, nil); err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(&b).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want := "id,t,horizon,prediction,lower,upper,target,naive_lower,naive_upper,m," +
				"split_lower,split_upper,bonferroni_lower,bonferroni_upper,conformal_jackknife_lower,conformal_jackknife_upper,m_calibration," +
				"recommended,recommended_lower,recommended_upper," +
				"aci_alpha,aci_lower,aci_upper,agaci_lower,agaci_upper,nexcp_lower,nexcp_upper,rolling_lower,rolling_upper"
			if got := strings.Join(recs[0], ","); got != want {
				t.Fatalf("header\n%s\nwant\n%s", got, want)
			}
			col := map[string]int{}
			for i, h := range recs[0] {
				col[h] = i
			}
			row := 1
			for _, s := range tc.r.Sequences {
				for k := range s.Steps {
					st := &s.Steps[k]
					rec := recs[row]
					row++
					cell := func(name string) string { return rec[col[name]] }
					num := func(name string) float64 {
						t.Helper()
						x, err := strconv.ParseFloat(cell(name), 64)
						if err != nil {
							t.Fatalf("row %d column %s: %v", row, name, err)
						}
						return x
					}
					check := func(name string, want float64) {
						t.Helper()
						if got := num(name); got != want {
							t.Errorf("row %d %s = %v, want %v", row, name, got, want)
						}
					}
					if cell("id") != s.ID {
						t.Errorf("row %d id %q, want %q", row, cell("id"), s.ID)
					}
					check("t", st.Step)
					check("horizon", float64(st.Horizon))
					check("prediction", st.Prediction)
					check("lower", st.Lower)
					check("upper", st.Upper)
					check("naive_lower", st.NaiveLower)
					check("naive_upper", st.NaiveUpper)
					check("m", float64(st.M))
					if st.Target == nil {
						if cell("target") != "" {
							t.Errorf("row %d target %q, want empty", row, cell("target"))
						}
					} else {
						check("target", *st.Target)
					}
					c := st.Conformal
					if c == nil {
						for _, name := range CSVHeader[10:17] {
							if cell(name) != "" {
								t.Errorf("row %d %s = %q without a calibration set, want empty", row, name, cell(name))
							}
						}
					} else {
						check("split_lower", c.SplitLower)
						check("split_upper", c.SplitUpper)
						check("bonferroni_lower", c.BonferroniLower)
						check("bonferroni_upper", c.BonferroniUpper)
						check("conformal_jackknife_lower", c.JackknifeLower)
						check("conformal_jackknife_upper", c.JackknifeUpper)
						check("m_calibration", float64(c.M))
					}
					if cell("recommended") != tc.kind {
						t.Errorf("row %d recommended %q, want %q", row, cell("recommended"), tc.kind)
					}
					lo, up := st.Lower, st.Upper
					if c != nil {
						lo, up = c.SplitLower, c.SplitUpper
					}
					check("recommended_lower", lo)
					check("recommended_upper", up)
				}
			}
			if row != len(recs) {
				t.Errorf("%d rows, want %d", len(recs)-1, row-1)
			}
		})
	}
}

// TestCSVNoRecommendation: with a calibration set but no labelled values
// to measure the kinds on, no kind is marked and its columns are empty.
func TestCSVNoRecommendation(t *testing.T) {
	t.Parallel()
	r := fixture()
	r.Conformal = &audit.Conformal{File: "cal.csv"}
	var b bytes.Buffer
	if err := WriteCSV(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs[1:] {
		if got := strings.Join(rec[17:20], ","); got != ",," {
			t.Fatalf("row %d: recommended columns %q, want empty", i+1, got)
		}
	}
}
