package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rnnaudit/rnnaudit/audit"
)

// chart is one chart of a report, drawn with gonum/plot as SVG.
type chart struct {
	// ID names the chart: "coverage", "width", "calibration", "fan-1",
	// "influence", "gap", "retrain"; Markdown reports use it as the file
	// name.
	ID string
	// Title and Caption are plain text (the renderers escape them);
	// they may contain sequence ids from the data.
	Title   string
	Caption string
	// SVG is a standalone SVG document (with its XML declaration).
	SVG []byte
}

// Chart groups, in the order the reports show them.
const (
	groupCoverage  = "coverage"
	groupFans      = "fans"
	groupInfluence = "influence"
	groupRetrain   = "retrain"
)

// chartSet is the charts of one report by group.
type chartSet map[string][]chart

// Colours of the charts (and of the HTML legend swatches).
var (
	colJack   = color.NRGBA{0x25, 0x63, 0xeb, 0xff} // jackknife+
	colBand   = color.NRGBA{0x25, 0x63, 0xeb, 0x33}
	colNaive  = color.NRGBA{0x6b, 0x72, 0x80, 0xff} // in-sample residual intervals
	colTarget = color.NRGBA{0x11, 0x18, 0x27, 0xff}
	colGoal   = color.NRGBA{0x05, 0x96, 0x69, 0xff} // the 1-alpha line
	colFloor  = color.NRGBA{0xdc, 0x26, 0x26, 0xff} // the 1-2alpha line
	colLow    = color.NRGBA{0xd9, 0x77, 0x06, 0xff}
	colHigh   = color.NRGBA{0xc0, 0x26, 0xd3, 0xff}
	colGrid   = color.NRGBA{0xe5, 0xe7, 0xeb, 0xff}
	colBar    = color.NRGBA{0x25, 0x63, 0xeb, 0xb0}
	colBarNeg = color.NRGBA{0xdc, 0x26, 0x26, 0xb0}
	colPred   = color.NRGBA{0x1e, 0x3a, 0x8a, 0xff} // predictions over a bar
)

// chart sizes.
const (
	chartW = 6 * vg.Inch
	chartH = 3.4 * vg.Inch
)

var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// fig is a plot with its legend, which render draws in a row under the
// plot instead of over the data.
type fig struct {
	*plot.Plot
	keys []key
}

// key is one legend entry.
type key struct {
	label  string
	thumbs []plot.Thumbnailer
}

func (f *fig) legend(label string, thumbs ...plot.Thumbnailer) {
	f.keys = append(f.keys, key{label, thumbs})
}

// newPlot returns a plot with the report's fonts, a light grid and axis
// labels.
func newPlot(xlabel, ylabel string) *fig {
	p := plot.New()
	p.BackgroundColor = color.Transparent
	for _, ts := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		size := ts.Size
		*ts = sansFont
		ts.Size = size
	}
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	axis := color.NRGBA{0x4b, 0x55, 0x63, 0xff}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.LineStyle.Color = axis
		a.Tick.LineStyle.Color = axis
		a.Tick.Label.Color = axis
		a.Label.TextStyle.Color = colTarget
	}
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	p.Add(g)
	p.X.Tick.Marker = niceTicks(num)
	p.Y.Tick.Marker = niceTicks(num)
	return &fig{Plot: p}
}

// render draws p as a standalone SVG document. The text uses the
// Liberation Sans metrics; the font-family falls back to the metric
// compatible Arial and Helvetica where Liberation Sans is not installed.
func render(p *fig, w, h vg.Length) []byte {
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	if len(p.keys) > 0 {
		legendH := p.drawLegend(dc)
		dc = draw.Crop(dc, 0, 0, legendH, 0)
	}
	p.Draw(dc)
	var b bytes.Buffer
	c.WriteTo(&b) // writes to memory: no error
	return bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;"))
}

// finite returns the points whose coordinates are both finite.
func finite(xs, ys []float64) plotter.XYs {
	var out plotter.XYs
	for i := range xs {
		if i < len(ys) && isFinite(xs[i]) && isFinite(ys[i]) {
			out = append(out, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	return out
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// steps returns 1..n as floats.
func steps(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

// line adds a line (with point markers when marks) to p and the legend.
func line(p *fig, xy plotter.XYs, c color.Color, width float64, dashes []vg.Length, marks bool, legend string) {
	if len(xy) == 0 {
		return
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return // non-finite points were filtered out
	}
	l.LineStyle.Color = c
	l.LineStyle.Width = vg.Points(width)
	l.LineStyle.Dashes = dashes
	p.Add(l)
	thumbs := []plot.Thumbnailer{l}
	if marks || len(xy) == 1 {
		s, err := plotter.NewScatter(xy)
		if err == nil {
			s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.2), Shape: draw.CircleGlyph{}}
			p.Add(s)
			thumbs = append(thumbs, s)
		}
	}
	if legend != "" {
		p.legend(legend, thumbs...)
	}
}

// points adds a scatter of glyphs.
func points(p *fig, xy plotter.XYs, c color.Color, r float64, shape draw.GlyphDrawer, legend string) {
	if len(xy) == 0 {
		return
	}
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(r), Shape: shape}
	p.Add(s)
	if legend != "" {
		p.legend(legend, s)
	}
}

// hline adds a horizontal line at y across [x0, x1].
func hline(p *fig, y, x0, x1 float64, c color.Color, dashes []vg.Length, legend string) {
	line(p, plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}}, c, 1.4, dashes, false, legend)
}

// bars adds one bar per value, centred on xs, as filled rectangles.
func bars(p *fig, xs, ys []float64, width float64, pos, neg color.Color, legend string) {
	var thumb plot.Thumbnailer
	for i := range xs {
		if !isFinite(xs[i]) || !isFinite(ys[i]) {
			continue
		}
		x0, x1 := xs[i]-width/2, xs[i]+width/2
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: ys[i]}, {X: x0, Y: ys[i]}})
		if err != nil {
			continue
		}
		poly.LineStyle.Width = 0
		poly.Color = pos
		if ys[i] < 0 {
			poly.Color = neg
		}
		p.Add(poly)
		if thumb == nil && ys[i] >= 0 {
			thumb = poly
		}
	}
	if legend != "" && thumb != nil {
		p.legend(legend, thumb)
	}
}

var (
	dashed = []vg.Length{vg.Points(6), vg.Points(3)}
	dotted = []vg.Length{vg.Points(2), vg.Points(2.5)}
)

// niceTicks returns a ticker with 4 to 8 labelled ticks at multiples of
// 1, 2 or 5 times a power of ten, labelled by format.
func niceTicks(format func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		if !(max > min) || !isFinite(min) || !isFinite(max) {
			return []plot.Tick{{Value: min, Label: format(min)}}
		}
		span := max - min
		step := math.Pow(10, math.Floor(math.Log10(span)))
		for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10} {
			if span/(step*m) <= 7 {
				step *= m
				break
			}
		}
		var out []plot.Tick
		for k := math.Ceil(min/step - 1e-9); k*step <= max+1e-9*step; k++ {
			v := k * step
			if math.Abs(v) < 1e-12*step {
				v = 0
			}
			// Round away binary noise (0.30000000000000004).
			v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
			out = append(out, plot.Tick{Value: v, Label: format(v)})
		}
		return out
	})
}

// percent labels a fraction in percent: 0.8 gives "80%".
func percent(v float64) string {
	return strconv.FormatFloat(math.Round(100*v*1e6)/1e6, 'f', -1, 64) + "%"
}

// integer labels whole numbers and leaves other ticks unlabelled.
func integer(v float64) string {
	if v != math.Trunc(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// drawLegend draws the legend entries of p in rows along the bottom of c
// and returns the height it took.
func (p *fig) drawLegend(c draw.Canvas) vg.Length {
	sty := text.Style{Color: colTarget, Font: font.From(sansFont, 10), Handler: plot.DefaultTextHandler,
		YAlign: draw.YCenter}
	const (
		thumbW = vg.Length(22)
		gap    = vg.Length(6)
		sep    = vg.Length(16)
		rowH   = vg.Length(15)
		left   = vg.Length(8)
	)
	// Lay the entries out in rows.
	type placed struct {
		k   key
		x   vg.Length
		row int
	}
	var items []placed
	x, row := left, 0
	width := c.Max.X - c.Min.X
	for _, k := range p.keys {
		w := thumbW + gap + sty.Width(k.label)
		if x > left && x+w > width-left {
			x, row = left, row+1
		}
		items = append(items, placed{k, x, row})
		x += w + sep
	}
	rows := row + 1
	h := vg.Length(rows)*rowH + 6
	for _, it := range items {
		y := c.Min.Y + h - 3 - (vg.Length(it.row)+0.5)*rowH
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: c.Min.X + it.x, Y: y - 5},
			Max: vg.Point{X: c.Min.X + it.x + thumbW, Y: y + 5},
		}}
		for _, t := range it.k.thumbs {
			t.Thumbnail(&icon)
		}
		c.FillText(sty, vg.Point{X: c.Min.X + it.x + thumbW + gap, Y: y}, it.k.label)
	}
	return h
}

// stepAxis sets up an x axis of steps 1..n.
func stepAxis(p *fig, n int) {
	p.X.Tick.Marker = niceTicks(integer)
	p.X.Min, p.X.Max = 0.5, float64(n)+0.5
}

// charts draws every chart the result has data for.
func charts(r *audit.Result, o *Options) chartSet {
	set := chartSet{}
	add := func(group string, c *chart) {
		if c != nil {
			set[group] = append(set[group], *c)
		}
	}
	if s := r.Summary; s != nil {
		add(groupCoverage, coverageChart(r))
		add(groupCoverage, leverageChart(r))
		add(groupCoverage, widthChart(r))
		add(groupCoverage, calibrationChart(r))
		add(groupCoverage, horizonChart(r))
	}
	for _, c := range fanCharts(r, o.fans(), o.target()) {
		add(groupFans, &c)
	}
	add(groupInfluence, influenceChart(r))
	add(groupInfluence, gapChart(r))
	add(groupRetrain, retrainChart(r))
	classCharts(set, r)
	return set
}

// coverageChart: coverage per step against the 1-alpha and 1-2alpha lines.
func coverageChart(r *audit.Result) *chart {
	s := r.Summary
	n := len(s.CoveragePerStep)
	if n == 0 {
		return nil
	}
	nominal, floor := 1-s.Alpha, 1-2*s.Alpha
	p := newPlot("step (row of the sequence)", "coverage")
	stepAxis(p, n)
	p.Y.Tick.Marker = niceTicks(percent)
	xs := steps(n)
	lo := math.Min(floor, nominal)
	for _, v := range append(append([]float64{}, s.CoveragePerStep...), s.Naive.CoveragePerStep...) {
		if isFinite(v) {
			lo = math.Min(lo, v)
		}
	}
	p.Y.Min, p.Y.Max = math.Max(0, math.Floor((lo-0.05)*20)/20), 1.0
	hline(p, nominal, 0.5, float64(n)+0.5, colGoal, dashed, fmt.Sprintf("target %s", pct0(nominal)))
	hline(p, floor, 0.5, float64(n)+0.5, colFloor, dotted, fmt.Sprintf("guarantee %s", pct0(floor)))
	line(p, finite(xs, s.Naive.CoveragePerStep), colNaive, 1.2, dashed, false, "in-sample residuals")
	line(p, finite(xs, s.CoveragePerStep), colJack, 2, nil, true, "jackknife+")
	return &chart{
		ID:    "coverage",
		Title: "Coverage per step",
		Caption: fmt.Sprintf("Share of the %s values inside their interval at each step. The dashed green line is the %s target (1 − α), the dotted red line the %s that the jackknife+ guarantees (1 − 2α); grey: intervals from in-sample residuals, for comparison.",
			evaluated(r), pct0(nominal), pct0(floor)),
		SVG: render(p, chartW, chartH),
	}
}

// horizonChart: coverage and mean width per horizon, for a model with
// several horizons; nil otherwise.
func horizonChart(r *audit.Result) *chart {
	s := r.Summary
	k := len(s.CoveragePerHorizon)
	if k < 2 {
		return nil
	}
	nominal, floor := 1-s.Alpha, 1-2*s.Alpha
	p := newPlot("horizon h (forecast of row t+h)", "coverage")
	p.X.Tick.Marker = niceTicks(integer)
	p.X.Min, p.X.Max = -0.5, float64(k)-0.5
	p.Y.Tick.Marker = niceTicks(percent)
	xs := make([]float64, k)
	for h := range xs {
		xs[h] = float64(h)
	}
	lo := math.Min(floor, nominal)
	for _, v := range s.CoveragePerHorizon {
		if isFinite(v) {
			lo = math.Min(lo, v)
		}
	}
	p.Y.Min, p.Y.Max = math.Max(0, math.Floor((lo-0.05)*20)/20), 1.0
	hline(p, nominal, -0.5, float64(k)-0.5, colGoal, dashed, fmt.Sprintf("target %s", pct0(nominal)))
	hline(p, floor, -0.5, float64(k)-0.5, colFloor, dotted, fmt.Sprintf("guarantee %s", pct0(floor)))
	line(p, finite(xs, s.CoveragePerHorizon), colJack, 2, nil, true, "jackknife+")
	var widths []string
	for h, w := range s.LengthPerHorizon {
		widths = append(widths, fmt.Sprintf("%d: %s", h, num(w)))
	}
	return &chart{
		ID:    "horizons",
		Title: "Coverage per horizon",
		Caption: fmt.Sprintf("Share of the %s values inside their interval for each horizon h, the forecasts made at row t for row t+h, against the %s target and the %s guarantee. Mean widths by horizon: %s.",
			evaluated(r), pct0(nominal), pct0(floor), strings.Join(widths, "; ")),
		SVG: render(p, chartW, chartH),
	}
}

// leverageChart: the training blocks' mean own leverage per step (the
// Newton estimator), with the level above which intervals from the
// trained model tend to under-cover.
func leverageChart(r *audit.Result) *chart {
	lev := r.Diag.LeveragePerStep
	n := len(lev)
	if n == 0 {
		return nil
	}
	p := newPlot("step (row of the sequence)", "mean own leverage")
	stepAxis(p, n)
	xs := steps(n)
	hi := 0.25
	for _, v := range lev {
		if isFinite(v) {
			hi = math.Max(hi, v)
		}
	}
	p.Y.Min, p.Y.Max = 0, math.Min(1, math.Ceil(hi*1.1*20)/20)
	hline(p, audit.HighLeverageBound, 0.5, float64(n)+0.5, colFloor, dotted, fmt.Sprintf("%.1f", audit.HighLeverageBound))
	line(p, finite(xs, lev), colJack, 2, nil, true, "leverage")
	return &chart{
		ID:    "leverage",
		Title: "Leverage per step",
		Caption: fmt.Sprintf("Mean over the training sequences of each value's own leverage at that step: the share of its own residual that the trained model absorbs (0: none, 1: the model interpolates it). Above the dotted line (%.1f) intervals built from the trained model tend to under-cover; compare with the coverage per step.",
			audit.HighLeverageBound),
		SVG: render(p, chartW, chartH),
	}
}

// widthChart: mean interval length per step, jackknife+ and in-sample.
func widthChart(r *audit.Result) *chart {
	s := r.Summary
	n := len(s.LengthPerStep)
	if n == 0 {
		return nil
	}
	p := newPlot("step (row of the sequence)", "mean interval width")
	stepAxis(p, n)
	xs := steps(n)
	p.Y.Min = 0
	line(p, finite(xs, s.Naive.LengthPerStep), colNaive, 1.2, dashed, false, "in-sample residuals")
	line(p, finite(xs, s.LengthPerStep), colJack, 2, nil, true, "jackknife+")
	return &chart{
		ID:      "width",
		Title:   "Interval width per step",
		Caption: "Mean width (upper − lower) of the finite intervals at each step: jackknife+ (blue) and the naive intervals from in-sample residuals (grey), which ignore that the model was fitted to those residuals.",
		SVG:     render(p, chartW, chartH),
	}
}

// calibrationChart: coverage against nominal level over the alpha grid.
func calibrationChart(r *audit.Result) *chart {
	var xs, ys []float64
	for _, c := range r.Calibration {
		xs = append(xs, c.Nominal)
		ys = append(ys, c.Coverage)
	}
	xy := finite(xs, ys)
	if len(xy) == 0 {
		return nil
	}
	p := newPlot("nominal coverage (1 − α)", "observed coverage")
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks(percent), niceTicks(percent)
	x0, x1 := 1.0, 0.0
	for _, v := range xy {
		x0, x1 = math.Min(x0, v.X), math.Max(x1, v.X)
	}
	x0, x1 = math.Floor(x0*20)/20, math.Ceil(x1*20)/20
	lo := math.Max(0, 2*x0-1)
	for _, v := range xy {
		lo = math.Min(lo, v.Y)
	}
	p.X.Min, p.X.Max = x0, x1
	p.Y.Min, p.Y.Max = math.Max(0, math.Floor((lo-0.02)*20)/20), 1
	line(p, plotter.XYs{{X: x0, Y: x0}, {X: x1, Y: x1}}, colGoal, 1.4, dashed, false, "ideal (observed = nominal)")
	line(p, plotter.XYs{{X: x0, Y: math.Max(0, 2*x0-1)}, {X: x1, Y: 2*x1 - 1}}, colFloor, 1.4, dotted, false, "guarantee (1 − 2α)")
	line(p, xy, colJack, 2, nil, true, "jackknife+")
	return &chart{
		ID:      "calibration",
		Title:   "Calibration",
		Caption: "Observed coverage for α from 0.05 to 0.5, from the same leave-one-block-out residuals. Points on the dashed diagonal are perfectly calibrated; the jackknife+ guarantees coverage above the dotted line.",
		SVG:     render(p, chartW, chartH),
	}
}

// fanSeq is a sequence chosen for a fan chart.
type fanSeq struct {
	index int // in r.Sequences
	flags int // steps that cross a threshold
}

// pickFans chooses up to n sequences for fan charts: with thresholds, up
// to half of them among the sequences with the most flagged steps, the
// rest the first sequences of the file; in file order.
func pickFans(r *audit.Result, n int) []fanSeq {
	low, high := r.Setting.Low, r.Setting.High
	all := make([]fanSeq, len(r.Sequences))
	for i := range r.Sequences {
		all[i] = fanSeq{index: i, flags: flaggedSteps(r, &r.Sequences[i])}
	}
	chosen := map[int]bool{}
	if low != nil || high != nil {
		byFlags := append([]fanSeq(nil), all...)
		// Stable: most flags first, then file order.
		for i := 1; i < len(byFlags); i++ {
			for j := i; j > 0 && byFlags[j].flags > byFlags[j-1].flags; j-- {
				byFlags[j], byFlags[j-1] = byFlags[j-1], byFlags[j]
			}
		}
		for _, f := range byFlags {
			if len(chosen) >= n/2 || f.flags == 0 {
				break
			}
			chosen[f.index] = true
		}
	}
	for i := 0; i < len(all) && len(chosen) < n; i++ {
		chosen[i] = true
	}
	var out []fanSeq
	for _, f := range all {
		if chosen[f.index] {
			out = append(out, f)
		}
	}
	return out
}

// flaggedSteps counts the steps (horizon 0) of s whose interval crosses a
// threshold.
func flaggedSteps(r *audit.Result, s *audit.SequenceResult) int {
	low, high := r.Setting.Low, r.Setting.High
	n := 0
	for _, st := range s.Steps {
		if st.Horizon == 0 && ((low != nil && st.Lower < *low) || (high != nil && st.Upper > *high)) {
			n++
		}
	}
	return n
}

// fanCharts draws the evaluated sequences sel chooses, one chart each:
// prediction, interval band, targets, thresholds and the steps whose
// interval crosses a threshold. Only horizon 0 is drawn. When every
// sequence has a single forecast (a many-to-one model) it draws one chart
// of the chosen sequences instead (by default the first of the file).
func fanCharts(r *audit.Result, sel FanSelection, ylabel string) []chart {
	if sel.Mode == FanNone || len(r.Sequences) == 0 {
		return nil
	}
	longest := 0
	for _, s := range r.Sequences {
		k := 0
		for _, st := range s.Steps {
			if st.Horizon == 0 {
				k++
			}
		}
		longest = max(longest, k)
	}
	picked := sel.pick(r)
	if longest < 2 {
		var idx []int
		if sel.Mode == FanAuto {
			n := sel.N
			if n == 0 {
				n = DefaultFanCharts
			}
			for i := range min(max(n*5, 20), len(r.Sequences)) {
				idx = append(idx, i)
			}
		} else {
			for _, f := range picked {
				idx = append(idx, f.index)
			}
			slices.Sort(idx)
		}
		if len(idx) == 0 {
			return nil
		}
		if c := perSequenceChart(r, idx, ylabel); c != nil {
			return []chart{*c}
		}
		return nil
	}
	var out []chart
	for k, f := range picked {
		s := r.Sequences[f.index]
		c := fanChart(r, s, ylabel)
		if c == nil {
			continue
		}
		c.ID = fmt.Sprintf("fan-%d", k+1)
		c.Title = fmt.Sprintf("Sequence %s", s.ID)
		c.Caption = fmt.Sprintf("Sequence %d of %d (id %s)", f.index+1, len(r.Sequences), s.ID)
		var parts []string
		if f.flags > 0 {
			parts = append(parts, plural(f.flags, "step")+" flagged")
		}
		if n, out := targetsOutside(s); n > 0 {
			parts = append(parts, fmt.Sprintf("%d of %s outside the interval", out, plural(n, "target")))
		}
		if len(parts) > 0 {
			c.Caption += ": " + strings.Join(parts, ", ")
		}
		c.Caption += "."
		out = append(out, *c)
	}
	return out
}

// yRange returns a padded range covering the finite values.
// bandRange is the y range of a chart of predictions, interval limits and
// targets, widened to show the audit thresholds.
func bandRange(r *audit.Result, series ...[]float64) (lo, hi float64) {
	var vals []float64
	for _, s := range series {
		vals = append(vals, s...)
	}
	for _, t := range []*float64{r.Setting.Low, r.Setting.High} {
		if t != nil {
			vals = append(vals, *t)
		}
	}
	return yRange(vals)
}

func yRange(vals []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if isFinite(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		return -1, 1
	}
	pad := 0.06 * (hi - lo)
	if pad == 0 {
		pad = math.Max(1, math.Abs(lo)) * 0.1
	}
	return lo - pad, hi + pad
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func fanChart(r *audit.Result, s audit.SequenceResult, ylabel string) *chart {
	var ts, pred, lower, upper, tx, ty, ox, oy []float64 // o: targets outside their interval
	for _, st := range s.Steps {
		if st.Horizon != 0 {
			continue
		}
		ts = append(ts, st.Step)
		pred = append(pred, st.Prediction)
		lower = append(lower, st.Lower)
		upper = append(upper, st.Upper)
		if st.Target != nil {
			if outside(&st) {
				ox, oy = append(ox, st.Step), append(oy, *st.Target)
			} else {
				tx, ty = append(tx, st.Step), append(ty, *st.Target)
			}
		}
	}
	if len(ts) == 0 {
		return nil
	}
	low, high := r.Setting.Low, r.Setting.High
	y0, y1 := bandRange(r, pred, lower, upper, ty, oy)
	p := newPlot("step (t)", ylabel)
	p.Y.Min, p.Y.Max = y0, y1
	x0, x1 := ts[0], ts[len(ts)-1]
	pad := 0.02 * (x1 - x0)
	p.X.Min, p.X.Max = x0-pad, x1+pad

	// The band: upper limits forward, lower limits back, unbounded ones
	// drawn to the edge of the chart.
	var band plotter.XYs
	for i := range ts {
		band = append(band, plotter.XY{X: ts[i], Y: clamp(upper[i], y0, y1)})
	}
	for i := len(ts) - 1; i >= 0; i-- {
		band = append(band, plotter.XY{X: ts[i], Y: clamp(lower[i], y0, y1)})
	}
	if poly, err := plotter.NewPolygon(band); err == nil {
		poly.Color = colBand
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.legend(fmt.Sprintf("%s interval", pct0(r.Setting.NominalCover)), poly)
	}
	var flagLow, flagHigh plotter.XYs
	if low != nil {
		hline(p, *low, x0-pad, x1+pad, colLow, dashed, "low "+num(*low))
		for i := range ts {
			if lower[i] < *low {
				flagLow = append(flagLow, plotter.XY{X: ts[i], Y: *low})
			}
		}
	}
	if high != nil {
		hline(p, *high, x0-pad, x1+pad, colHigh, dashed, "high "+num(*high))
		for i := range ts {
			if upper[i] > *high {
				flagHigh = append(flagHigh, plotter.XY{X: ts[i], Y: *high})
			}
		}
	}
	line(p, finite(ts, pred), colJack, 1.8, nil, false, "prediction")
	points(p, finite(tx, ty), colTarget, 2.4, draw.CircleGlyph{}, "target")
	points(p, finite(ox, oy), colFloor, 3.2, draw.CrossGlyph{}, "target outside its interval")
	points(p, flagLow, colLow, 4, draw.PyramidGlyph{}, "flagged low")
	points(p, flagHigh, colHigh, 4, draw.PyramidGlyph{}, "flagged high")
	return &chart{SVG: render(p, chartW, chartH*0.95)}
}

// targetsOutside counts the known targets of horizon 0 of a sequence (the
// ones a fan chart draws) and those outside their interval.
func targetsOutside(s audit.SequenceResult) (n, out int) {
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Horizon == 0 && st.Target != nil {
			n++
			if outside(st) {
				out++
			}
		}
	}
	return n, out
}

// outside reports whether the target of a forecast lies outside its
// interval.
func outside(st *audit.StepResult) bool {
	return st.Target != nil && !(st.Lower <= *st.Target && *st.Target <= st.Upper)
}

// perSequenceChart draws the single forecasts of the sequences at the
// indices idx (in file order) as intervals, for many-to-one models.
func perSequenceChart(r *audit.Result, idx []int, ylabel string) *chart {
	var xs, pred, lower, upper, tx, ty, ox, oy []float64 // o: targets outside their interval
	for _, i := range idx {
		s := r.Sequences[i]
		for _, st := range s.Steps {
			if st.Horizon != 0 {
				continue
			}
			x := float64(i + 1)
			xs = append(xs, x)
			pred = append(pred, st.Prediction)
			lower = append(lower, st.Lower)
			upper = append(upper, st.Upper)
			if st.Target != nil {
				if outside(&st) {
					ox, oy = append(ox, x), append(oy, *st.Target)
				} else {
					tx, ty = append(tx, x), append(ty, *st.Target)
				}
			}
			break
		}
	}
	if len(xs) == 0 {
		return nil
	}
	low, high := r.Setting.Low, r.Setting.High
	y0, y1 := bandRange(r, pred, lower, upper, ty, oy)
	p := newPlot("sequence (order in the file)", ylabel)
	p.X.Tick.Marker = niceTicks(integer)
	p.Y.Min, p.Y.Max = y0, y1
	x0, x1 := xs[0]-0.5, xs[len(xs)-1]+0.5
	p.X.Min, p.X.Max = x0, x1
	var thumb plot.Thumbnailer
	for i := range xs {
		l, err := plotter.NewLine(plotter.XYs{{X: xs[i], Y: clamp(lower[i], y0, y1)}, {X: xs[i], Y: clamp(upper[i], y0, y1)}})
		if err != nil {
			continue
		}
		l.LineStyle.Color = colBar
		l.LineStyle.Width = vg.Points(5)
		p.Add(l)
		thumb = l
	}
	if thumb != nil {
		p.legend(fmt.Sprintf("%s interval", pct0(r.Setting.NominalCover)), thumb)
	}
	var flagLow, flagHigh plotter.XYs
	if low != nil {
		hline(p, *low, x0, x1, colLow, dashed, "low "+num(*low))
		for i := range xs {
			if lower[i] < *low {
				flagLow = append(flagLow, plotter.XY{X: xs[i], Y: *low})
			}
		}
	}
	if high != nil {
		hline(p, *high, x0, x1, colHigh, dashed, "high "+num(*high))
		for i := range xs {
			if upper[i] > *high {
				flagHigh = append(flagHigh, plotter.XY{X: xs[i], Y: *high})
			}
		}
	}
	points(p, finite(xs, pred), colPred, 2.6, draw.BoxGlyph{}, "prediction")
	points(p, finite(tx, ty), colTarget, 2.4, draw.CircleGlyph{}, "target")
	points(p, finite(ox, oy), colFloor, 3.2, draw.CrossGlyph{}, "target outside its interval")
	points(p, flagLow, colLow, 4, draw.PyramidGlyph{}, "flagged low")
	points(p, flagHigh, colHigh, 4, draw.PyramidGlyph{}, "flagged high")
	return &chart{
		ID:      "fan-1",
		Title:   "Intervals of the first sequences",
		Caption: fmt.Sprintf("The model makes one forecast per sequence: the intervals of the first %s.", plural(len(xs), "sequence")),
		SVG:     render(p, chartW, chartH),
	}
}

// influenceChart: histogram of the influence sizes |theta_-b - theta_hat|.
func influenceChart(r *audit.Result) *chart {
	var vals plotter.Values
	for _, v := range r.Diag.InfluenceNorms {
		if isFinite(v) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	bins := int(math.Round(math.Sqrt(float64(len(vals)))))
	bins = max(5, min(40, bins))
	h, err := plotter.NewHist(vals, bins)
	if err != nil {
		return nil
	}
	h.FillColor = colBar
	h.LineStyle.Color = color.White
	h.LineStyle.Width = vg.Points(0.5)
	p := newPlot("parameter change |Δθ| when the block is left out", "blocks")
	p.Add(h)
	p.Y.Min = 0
	top := 0.0
	for _, b := range h.Bins {
		top = math.Max(top, b.Weight)
	}
	p.Y.Max = top * 1.08
	return &chart{
		ID:      "influence",
		Title:   "Influence of each block",
		Caption: fmt.Sprintf("How far the parameters move when each of the %s is left out (influence estimate). A long right tail means a few blocks drive the model; they are listed below.", plural(len(vals), "block")),
		SVG:     render(p, chartW, chartH),
	}
}

// gapChart: jackknife+ width minus in-sample width per step.
func gapChart(r *audit.Result) *chart {
	s := r.Summary
	if s == nil || len(s.GapPerStep) == 0 {
		return nil
	}
	n := len(s.GapPerStep)
	p := newPlot("step (row of the sequence)", "width gap")
	stepAxis(p, n)
	bars(p, steps(n), s.GapPerStep, 0.7, colBar, colBarNeg, "")
	hline(p, 0, 0.5, float64(n)+0.5, colNaive, nil, "")
	lo, hi := minMax(s.GapPerStep)
	if lo <= hi {
		pad := 0.08 * math.Max(hi-lo, math.Max(math.Abs(hi), math.Abs(lo)))
		p.Y.Min, p.Y.Max = math.Min(0, lo-pad), math.Max(0, hi+pad)
	}
	return &chart{
		ID:      "gap",
		Title:   "Jackknife+ versus in-sample width",
		Caption: "How much wider (above zero) or narrower the jackknife+ intervals are than the naive in-sample residual intervals, step by step. Wider means the model fits its training data better than new data.",
		SVG:     render(p, chartW, chartH*0.85),
	}
}

// retrainChart: cosine between exact and influence parameter changes.
func retrainChart(r *audit.Result) *chart {
	rt := r.Retrain
	if rt == nil || len(rt.Cosine) == 0 {
		return nil
	}
	n := len(rt.Cosine)
	p := newPlot("re-trained block", "cosine (exact, influence)")
	stepAxis(p, n)
	bars(p, steps(n), rt.Cosine, 0.6, colBar, colBarNeg, "cosine")
	hline(p, 1, 0.5, float64(n)+0.5, colGoal, dashed, "perfect agreement")
	if len(rt.NormRatio) == n {
		points(p, finite(steps(n), rt.NormRatio), colTarget, 3, draw.CircleGlyph{}, "|influence| / |exact|")
	}
	lo, hi := minMax(append(append([]float64{}, rt.Cosine...), rt.NormRatio...))
	p.Y.Min, p.Y.Max = math.Min(0, lo-0.05), math.Max(1.15, hi+0.1)
	return &chart{
		ID:      "retrain",
		Title:   "Influence against exact re-training",
		Caption: "For each re-trained block: the cosine between the parameter change found by re-training without the block and the influence estimate (bars; 1 is perfect), and the ratio of their sizes (dots; 1 is perfect).",
		SVG:     render(p, chartW, chartH*0.85),
	}
}
