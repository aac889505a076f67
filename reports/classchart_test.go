package reports

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/classify"
)

// classFixture is fixture() as a binary classifier's result: four
// labelled forecasts in two bins of the reliability diagram, worked by
// hand: [0.1, 0.2) holds p = 0.15 twice with labels 0 and 1 (frequency
// 0.5), [0.8, 0.9) p = 0.85 twice with labels 1 and 1 (frequency 1); the
// expected calibration error is 2/4 |0.15 - 0.5| + 2/4 |0.85 - 1| = 0.25.
func classFixture() *classify.Summary {
	fc := func(p float64, y int) classify.Forecast {
		return classify.Forecast{Probs: classify.BinaryProbs(p), ProbLower: p - 0.05, ProbUpper: p + 0.05, Set: []int{y}, Label: y}
	}
	return classify.Summarize([]classify.Forecast{fc(0.15, 0), fc(0.15, 1), fc(0.85, 1), fc(0.85, 1)}, 0.1, classify.LAC, nil, nil)
}

func TestReliabilityChart(t *testing.T) {
	r := fixture()
	if c := reliabilityChart(r); c != nil {
		t.Fatalf("a regression result has a reliability chart: %+v", c.ID)
	}
	r.Classification = classFixture()
	c := reliabilityChart(r)
	if c == nil {
		t.Fatal("no reliability chart for a classifier")
	}
	if !strings.Contains(c.Caption, "2 of 10 equal bins") || !strings.Contains(c.Caption, "expected calibration error 0.25") ||
		!strings.Contains(c.Caption, "4 labelled forecasts") {
		t.Errorf("caption %q: want 2 of 10 bins, ECE 0.25 and 4 forecasts", c.Caption)
	}
	if n := len(regexp.MustCompile(`<path`).FindAll(c.SVG, -1)); n == 0 {
		t.Error("the chart draws nothing")
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, r, nil); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	sec := strings.Index(page, `<section id="classifier">`)
	fig := strings.Index(page, `<figure id="chart-reliability">`)
	end := strings.Index(page[max(sec, 0):], "</section>") + max(sec, 0)
	if sec < 0 || fig < sec || fig > end {
		t.Errorf("the reliability diagram is not inside the classifier's section (section at %d, figure at %d, end %d)", sec, fig, end)
	}

	var m bytes.Buffer
	files, err := WriteMarkdown(&m, r, "report_files", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range files {
		found = found || f.Name == "report_files/reliability.svg"
	}
	if !found || !strings.Contains(m.String(), "![Reliability diagram](report_files/reliability.svg)") {
		t.Errorf("the Markdown report does not link the reliability diagram (files %d)", len(files))
	}
}
