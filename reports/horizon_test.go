package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A model with several horizons gets per-horizon coverage and width in the
// JSON, the summary table and a chart; joint coverage counts every
// forecast of a sequence.
func TestPerHorizonReport(t *testing.T) {
	r := fixture()
	r.Model.Horizons = 2
	r.Summary.CoveragePerHorizon = []float64{0.9375, 0.5}
	r.Summary.LengthPerHorizon = []float64{3, 4.5}
	r.Summary.PointsPerHorizon = []int{16, 12}
	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Coverage []float64 `json:"coverage_per_horizon"`
			Length   []float64 `json:"length_per_horizon"`
			Points   []int     `json:"points_per_horizon"`
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Summary; len(s.Coverage) != 2 || s.Coverage[1] != 0.5 || s.Length[1] != 4.5 || s.Points[0] != 16 {
		t.Errorf("JSON per horizon: %+v", s)
	}
	var keys []string
	for _, x := range summaryRows(r) {
		keys = append(keys, x.Key+" = "+x.Value)
	}
	all := strings.Join(keys, "\n")
	for _, want := range []string{
		"Joint coverage (every forecast of a sequence) = 33.3%",
		"Horizon 0 (forecast of row t+0): coverage, mean width = 93.8%, 3 (16 values)",
		"Horizon 1 (forecast of row t+1): coverage, mean width = 50.0%, 4.5 (12 values)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("summary rows lack %q:\n%s", want, all)
		}
	}
	if !strings.Contains(subline(r), "every forecast of a sequence covered in 33.3% of sequences") {
		t.Errorf("subline %q", subline(r))
	}
	b.Reset()
	if err := WriteHTML(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `id="chart-horizons"`) || !strings.Contains(b.String(), "Mean widths by horizon: 0: 3; 1: 4.5.") {
		t.Error("the HTML report lacks the per-horizon chart")
	}

	// One horizon: no per-horizon JSON, rows or chart.
	b.Reset()
	if err := WriteHTML(&b, fixture(), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "chart-horizons") || strings.Contains(b.String(), "Horizon 0") {
		t.Error("a one-horizon report has per-horizon output")
	}
}

// With one forecast per sequence, joint coverage is the coverage: the
// summary does not repeat it as "every step covered".
func TestManyToOneJointCoverage(t *testing.T) {
	r := fixture()
	r.Model.ManyToOne = true
	if s := subline(r); strings.Contains(s, "covered in") {
		t.Errorf("subline %q speaks of steps covered", s)
	}
	for _, x := range summaryRows(r) {
		if strings.HasPrefix(x.Key, "Joint coverage") {
			t.Errorf("summary row %q for a many-to-one model", x.Key)
		}
	}
	if s := subline(fixture()); !strings.Contains(s, "every step covered in 33.3% of sequences") {
		t.Errorf("one forecast per step: subline %q", s)
	}
}

// A target outside its interval is marked in the fan chart (a red cross
// with its own legend entry) and counted in the caption; the lead says how
// the sequences were chosen.
func TestFanChartOutside(t *testing.T) {
	r := fixture()
	st := &r.Sequences[0].Steps[1]
	y := st.Upper + 1
	st.Target = &y
	cs := fanCharts(r, FanSelection{N: 3}, "y")
	if len(cs) == 0 {
		t.Fatal("no fan charts")
	}
	var c *chart
	for i := range cs {
		if strings.Contains(cs[i].Caption, "id "+r.Sequences[0].ID) {
			c = &cs[i]
		}
	}
	if c == nil {
		t.Fatalf("no chart of sequence %s", r.Sequences[0].ID)
	}
	if !strings.Contains(c.Caption, "1 of 5 targets outside the interval") || !strings.Contains(string(c.SVG), "target outside its interval") {
		t.Errorf("caption %q; legend entry in SVG: %v", c.Caption, strings.Contains(string(c.SVG), "target outside its interval"))
	}
	for _, c := range fanCharts(fixture(), FanSelection{N: 3}, "y") {
		if strings.Contains(string(c.SVG), "target outside its interval") {
			t.Errorf("%s: an outside mark without targets outside", c.ID)
		}
	}
	if !strings.Contains(fansLead(r, FanSelection{}), "Up to half of the sequences shown are those with the most steps") {
		t.Errorf("lead %q does not say how the sequences were chosen", fansLead(r, FanSelection{}))
	}
	r.Setting.Low, r.Setting.High = nil, nil
	if !strings.Contains(fansLead(r, FanSelection{}), "The sequences shown are the first of the file.") {
		t.Errorf("lead without thresholds: %q", fansLead(r, FanSelection{}))
	}
}

// The settings show each parameter tensor's role beside its name.
func TestParamRoles(t *testing.T) {
	r := fixture()
	o := &Options{ParamRoles: map[string]string{"rnn.weight_ih": `W of RNN node "/rnn/RNN"`}}
	for _, x := range settingRows(r, o) {
		if x.Key == "Parameters" {
			if want := `97 in 4 tensors: rnn.weight_ih (W of RNN node "/rnn/RNN"), rnn.weight_hh, head.weight, head.bias`; x.Value != want {
				t.Errorf("parameters %q, want %q", x.Value, want)
			}
			return
		}
	}
	t.Error("no Parameters row")
}
