package reports

import (
	"fmt"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rnnaudit/rnnaudit/audit"
)

// This file: a classifier's charts (the reliability diagram), drawn from
// the figures package audit/classify computed.

// groupClass is the chart group of a classifier's section.
const groupClass = "classifier"

// reliabilityChart: the reliability diagram of a classifier's labelled
// forecasts, the observed frequency of the event in each bin of
// predicted probability (classify.Summary.Reliability) against the
// bin's mean probability, with the diagonal of perfect calibration;
// nil for regression or without a labelled forecast.
func reliabilityChart(r *audit.Result) *chart {
	s := r.Classification
	if s == nil || s.Labelled == 0 {
		return nil
	}
	var xs, ys []float64
	n := 0
	for _, b := range s.Reliability {
		if b.N > 0 {
			xs = append(xs, b.MeanProb)
			ys = append(ys, b.Frequency)
			n++
		}
	}
	xy := finite(xs, ys)
	if len(xy) == 0 {
		return nil
	}
	what, event := "probability of class 1", "share of labels 1"
	reading := "Points below the diagonal over-estimate the probability of class 1, points above it under-estimate it."
	if s.Classes > 2 {
		what, event = "top class's probability", "share whose top class is the label"
		reading = "Points below the diagonal are over-confident, points above it under-confident."
	}
	p := newPlot("predicted "+what, "observed "+event)
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks(percent), niceTicks(percent)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	line(p, plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}}, colGoal, 1.4, dashed, false, "perfectly calibrated")
	line(p, xy, colJack, 2, nil, true, "the model's forecasts")
	// The bins' forecasts as ticks along the bottom: a bin of few
	// forecasts is a noisy point.
	var rug plotter.XYs
	for _, b := range s.Reliability {
		if b.N > 0 {
			rug = append(rug, plotter.XY{X: (b.Lo + b.Hi) / 2, Y: 0})
		}
	}
	points(p, rug, colNaive, 2, draw.PyramidGlyph{}, "bins with forecasts")
	return &chart{
		ID:    "reliability",
		Title: "Reliability diagram",
		Caption: fmt.Sprintf("Observed frequency against the mean predicted probability in %d of %d equal bins of the %s over %d labelled forecasts (expected calibration error %s: the bins' mean distance from the diagonal, weighted by their forecasts). %s",
			n, len(s.Reliability), what, s.Labelled, num(s.ECE), reading),
		SVG: render(p, chartW*0.8, chartH*1.2),
	}
}

// classCharts adds a classifier's charts to the set.
func classCharts(set chartSet, r *audit.Result) {
	if c := reliabilityChart(r); c != nil {
		set[groupClass] = append(set[groupClass], *c)
	}
}
