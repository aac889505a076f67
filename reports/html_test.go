package reports

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
)

func TestHTMLGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fixture(), &Options{Command: "audit --model m.onnx --data train.csv"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.html", b.Bytes())
}

// TestHTMLContents checks the sections and charts of a full report, and
// that the page loads nothing from outside.
func TestHTMLContents(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fixture(), nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"90% intervals covered 87.5% of 16 test values; no value was flagged ‘below 4’; flagged ‘above 10’ with 75.0% precision.",
		`id="warnings"`, "eigenvalue(s) below -lambda",
		`id="chart-coverage"`, `id="chart-width"`, `id="chart-calibration"`, `id="chart-fan-1"`, `id="chart-fan-3"`,
		`id="chart-influence"`, `id="chart-gap"`, `id="chart-retrain"`,
		"Most influential blocks", "sequence 7 (id P007)", "Risk flags", "Time per phase",
		"Influence against exact re-training",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg"); n != 9 {
		t.Errorf("%d inline SVG charts, want 9", n)
	}
	if strings.Contains(page, "<?xml") {
		t.Error("an XML declaration is left inside the page")
	}
	checkSelfContained(t, page)
}

// checkSelfContained fails if the page could load anything: scripts,
// external sources, stylesheets or fonts.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`),
		regexp.MustCompile(`(?i)<[^>]*\ssrc\s*=`),
		regexp.MustCompile(`(?i)<link`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)url\(`),
		regexp.MustCompile(`(?i)<[^>]*href\s*=\s*"(https?:)?//`),
		regexp.MustCompile(`(?i)xlink:href`),
	} {
		if loc := re.FindStringIndex(page); loc != nil {
			t.Errorf("the page is not self-contained: %q at byte %d", page[loc[0]:min(len(page), loc[1]+40)], loc[0])
		}
	}
}

// xssResult is the fixture with markup in every string that comes from
// the model or the data.
func xssResult() (*audit.Result, *Options) {
	const s = `<script>alert(1)</script>`
	r := fixture()
	r.Model.Path = "models/" + s + ".onnx"
	r.Model.ParamNames = append(r.Model.ParamNames, s)
	r.Setting.TrainFile = s + ".csv"
	r.Setting.TestFile = `"><img src=x onerror=alert(2)>.csv`
	r.Setting.Notes = append(r.Setting.Notes, s)
	r.Diag.Warnings = append(r.Diag.Warnings, audit.Warning{Code: s, Step: -1})
	r.Diag.Influential[0].Block = "sequence 1 (id " + s + ")"
	r.Retrain.Blocks[0] = s
	for i := range r.Sequences {
		r.Sequences[i].ID = s + `$1 | * _ [x](javascript:alert(3))`
	}
	o := &Options{Columns: &Columns{ID: s, Time: "<b>t</b>", Target: s, Features: []string{s, "x&y"}},
		Command: "audit --model '" + s + "'"}
	return r, o
}

func TestHTMLEscapes(t *testing.T) {
	r, o := xssResult()
	var b bytes.Buffer
	if err := WriteHTML(&b, r, o); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	checkSelfContained(t, page)
	for _, bad := range []string{"<script", "<img", "<b>t</b>"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("unescaped %q in the page: …%s…", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the ids are not shown as text")
	}
	// The sequence id appears in a chart's title, its aria-label and its
	// caption, escaped each time.
	if !strings.Contains(page, `aria-label="Sequence &lt;script&gt;`) {
		t.Error("the chart label is not escaped")
	}
}

func TestHTMLNoSummary(t *testing.T) {
	r := fixture()
	r.Summary, r.Calibration, r.Retrain = nil, nil, nil
	for i := range r.Sequences {
		for k := range r.Sequences[i].Steps {
			r.Sequences[i].Steps[k].Target = nil
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "90% intervals for 18 forecasts of 3 sequences; the test data has no targets") {
		t.Errorf("headline of an unlabelled audit missing:\n%s", page[:min(len(page), 3000)])
	}
	for _, absent := range []string{`id="chart-coverage"`, `id="summary"`, `id="retrain"`} {
		if strings.Contains(page, absent) {
			t.Errorf("unlabelled report shows %s", absent)
		}
	}
	if !strings.Contains(page, `id="chart-fan-1"`) {
		t.Error("unlabelled report lacks the fan charts")
	}
}

func TestHTMLManyToOne(t *testing.T) {
	r := fixture()
	r.Model.ManyToOne = true
	for i := range r.Sequences {
		r.Sequences[i].Steps = r.Sequences[i].Steps[5:]
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Intervals of the first sequences") {
		t.Error("a many-to-one result lacks the per-sequence interval chart")
	}
}
