// Package adaptive is the coverage of prediction intervals along a time
// series, over plain values: how the coverage of one kind of interval
// behaves over time (rolling coverage, the dependence-aware tolerance of
// Newey-West, drift between the early and late test period, the series
// that under-cover). It knows nothing of models, data sets or the
// audit's options: package audit gathers the forecasts in time order
// and calls it.
package adaptive
