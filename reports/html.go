package reports

import (
	"bytes"
	"embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

//go:embed templates/report.html.tmpl
var templateFS embed.FS

// htmlTemplate is parsed once, when the first HTML report is written (at
// start it was half of the package initialisation of every command, a
// one-sequence predict's included); missingkey=error makes a missing map
// key a failure instead of an empty string.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html.tmpl").Option("missingkey=error").
		ParseFS(templateFS, "templates/report.html.tmpl"))
})

// WriteHTML writes the report of r as one self-contained HTML page: no
// scripts, no external resources, the charts as inline SVG. Every string
// from the model or the data (file names, ids, column and tensor names)
// is escaped by html/template.
func WriteHTML(w io.Writer, r *audit.Result, o *Options) error {
	var b bytes.Buffer
	if err := htmlTemplate().Execute(&b, newPage(r, o, charts(r, o))); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// page is what the HTML template shows; every field is plain text or a
// chart whose SVG this package drew.
type page struct {
	Title         string
	ModelFile     string
	Headline      string
	Level         string
	Verdict       string
	Subline       string
	Calibrated    []string // the recommendation, or what a calibration set would add
	Conformal     *conformalView
	Adaptive      *adaptiveView
	Class         *classView
	Cards         []card
	Warnings      []string
	Notes         []string
	Summary       []row
	Audit         []auditRow
	Coverage      []chartView
	OverTime      *timeView
	Fans          []chartView
	FansLead      string
	FansNote      string
	Influence     []chartView
	Influential   []influenceRow
	Retrain       []chartView
	RetrainRows   []row
	RetrainBlocks []retrainBlockRow
	Settings      []row
	Command       []string
	Diagnostics   []row
	Phases        []row
	Method        string // what ran, for the footer
	Tool          string // the rnnaudit that wrote the page, for the footer
	StepTable     *table // coverage and width per step
	HorizonTable  *table // coverage and width per horizon
}

// card is one key number under the headline.
type card struct{ Label, Value, Note, Level string }

// chartView is a chart ready to inline.
type chartView struct {
	ID, Title, Caption string
	SVG                template.HTML
}

func newPage(r *audit.Result, o *Options, cs chartSet) *page {
	level, verdictText := verdict(r)
	p := &page{
		Title:         "Reliability audit of " + modelName(r),
		ModelFile:     modelName(r),
		Headline:      headline(r),
		Level:         level,
		Verdict:       verdictText,
		Subline:       subline(r),
		Method:        methodText(r),
		Calibrated:    conformalLines(r),
		Conformal:     newConformalView(r),
		Adaptive:      newAdaptiveView(r),
		Class:         newClassView(r),
		Warnings:      warnings(r),
		Notes:         notes(r),
		Summary:       summaryRows(r),
		Audit:         auditRows(r),
		Coverage:      views(cs[groupCoverage]),
		OverTime:      newTimeView(r),
		Fans:          views(cs[groupFans]),
		FansLead:      fansLead(r, o.fans()),
		StepTable:     stepTable(r),
		HorizonTable:  horizonTable(r),
		Tool:          toolName(o),
		Influence:     views(cs[groupInfluence]),
		Influential:   influenceRows(r),
		Retrain:       views(cs[groupRetrain]),
		RetrainRows:   retrainRows(r),
		RetrainBlocks: retrainBlockRows(r),
		Settings:      settingRows(r, nil),
		Diagnostics:   diagRows(r),
		Phases:        phaseRows(r),
	}
	if o != nil {
		p.Settings = settingRows(r, &Options{Columns: o.Columns, ParamRoles: o.ParamRoles, ToolVersion: o.ToolVersion})
		if o.Command != "" {
			p.Command = strings.Fields(o.Command)
		}
	}
	if p.Class != nil {
		p.Class.Charts = views(cs[groupClass])
	}
	if r.Model.Horizons > 1 && len(p.Fans) > 0 {
		p.FansNote = fmt.Sprintf("The model forecasts %d horizons; the charts show horizon 0 (the forecast for the step itself).", r.Model.Horizons)
	}
	if s := r.Summary; s != nil {
		p.Cards = append(p.Cards,
			card{"Coverage", pct(s.Coverage), "target " + pct0(1-s.Alpha) + "; " + pct0(1-2*s.Alpha) + " guaranteed with exact re-training", level},
			card{"Mean interval width", num(s.MeanLength), "in-sample: " + num(s.Naive.MeanLength), ""},
			card{"RMSE", num(s.RMSE), "of the point predictions", ""},
		)
		for _, a := range []struct {
			t   *interval.Threshold
			low bool
		}{{s.Audit.Low, true}, {s.Audit.High, false}} {
			if a.t != nil {
				p.Cards = append(p.Cards, card{"Precision of flag ‘" + thresholdName(a.t, a.low) + "’",
					pct(a.t.Precision), "recall " + pct(a.t.Recall) + "; " + plural(a.t.Flagged, "value") + " flagged", ""})
			}
		}
	}
	return p
}

func views(cs []chart) []chartView {
	out := make([]chartView, len(cs))
	for i, c := range cs {
		out[i] = chartView{ID: c.ID, Title: c.Title, Caption: c.Caption, SVG: inlineSVG(c.SVG, c.Title)}
	}
	return out
}

var (
	svgPrelude = regexp.MustCompile(`(?s)\A.*?<svg width="[^"]*" height="[^"]*"`)
	svgOpen    = regexp.MustCompile(`\A<svg `)
)

// inlineSVG turns a standalone SVG document drawn by gonum/plot (whose
// text vgsvg escapes) into an element for an HTML page: without the XML
// declaration, scaled by CSS through its viewBox, labelled for screen
// readers. label is escaped here.
func inlineSVG(svg []byte, label string) template.HTML {
	s := svgPrelude.ReplaceAllLiteral(svg, []byte("<svg"))
	s = svgOpen.ReplaceAllLiteral(s, []byte(`<svg class="chart" role="img" aria-label="`+html.EscapeString(label)+`" `))
	return template.HTML(s) // #nosec: drawn by this package; all text in it is escaped
}
