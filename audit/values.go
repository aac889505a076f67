package audit

// The values the audit's phases pass between them: a forecast of a
// sequence, the labelled points that get intervals, and the level and
// thresholds their metrics depend on. They live here, apart from the
// phases that make them, so that a reader finds them in one place.

import "github.com/rnnaudit/rnnaudit/audit/modelio"

// forecast is one forecast of a sequence: made at row T for horizon H
// (modelio.IO.Forecasts lists them, modelio.IO.Index places them in the
// model's output).
type forecast = modelio.Forecast

// level are the figures the interval metrics depend on besides the
// intervals: alpha (of the Winkler score and the quantiles) and the
// audit thresholds (nil: not audited).
type level struct {
	alpha     float64
	low, high *float64
}

// point is one forecast of an evaluated sequence.
type point struct {
	seq   int // index into the evaluated (or calibration) dataset
	f     forecast
	group int // index into its groups
	pos   int // index into the group's output
	pred  float64
	y     float64
	has   bool // target known
}

// evaluation are the forecasts that get intervals, with the trained
// model's predictions: test are the evaluated sequences' (the test set,
// or the training set in a self-audit), cal the calibration set's (nil
// without one). Perturbed predictions index them test first, then cal.
type evaluation struct {
	test, cal []point
}

// sortedForecasts are the keys of m by row, then horizon.
func sortedForecasts[V any](m map[forecast]V) []forecast { return modelio.SortedKeys(m) }
