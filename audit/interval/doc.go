// Package interval is the arithmetic of prediction intervals over plain
// values: from residuals, perturbed predictions and calibration scores
// to limits, and from limits and observed values to the figures that
// judge them. It holds the quantile rules (the ranks
// ceil((1-alpha)(m+1)) and floor(alpha(m+1)), and a selection that does
// not sort); jackknife+ limits from the sets V- and V+ (JackknifePlus),
// the sets themselves from a forecast's leave-one-block-out residuals
// and the blocks' predictions (Residual, Skip, JackknifeValues), and the
// banded selection that gives the same limits and coverage counts at
// paper scale without forming every value (Selector, Scratch.Banded);
// the conformal quantile of split conformal and, at alpha / L, of
// Bonferroni (UpperQuantile); the conformalized jackknife+ score and
// limits (CJScore, CJLimits); the calibration curve's coverage counts
// (CountCovered, Curve); and the metrics of a set of intervals (Metrics:
// coverage, width, Winkler score, precision and recall of threshold
// flags) with the sampling tolerance of a coverage (CoverageTolerance).
// The method is in docs/design.md, sections 5, 6 and 8.
//
// It knows nothing of models, data sets, the audit's options or its
// judgement: package audit gathers the values, calls it, and decides what
// the figures mean.
package interval
