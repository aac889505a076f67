// Package classify is the arithmetic of a classifier's audit over plain
// values: the nonconformity scores of a label (LAC, APS, RAPS; Score),
// prediction sets with coverage 1 - alpha from the leave-one-block-out
// models without a calibration set (jackknife+ sets, Romano, Sesia and
// Candès 2020, in the form of Barber et al.'s jackknife+: JackknifeSet)
// and from a calibration set (split conformal: SplitSet), the jackknife
// interval of a predicted probability from the leave-one-block-out
// models' probabilities (ProbInterval), and the figures that judge a set
// of forecasts: set coverage overall, by set size and by true class, mean
// set size, the shares of singleton and empty sets, Brier score, log
// loss, expected calibration error with its reliability diagram, AUROC,
// and the precision and recall of a risk flag on a probability's limit
// (Summarize).
//
// Classes are 0..K-1; a binary forecast's probability is that of class
// 1. It knows nothing of models, data sets or the audit's options:
// package audit gathers the values and calls it. The method is in
// docs/design.md (classification section) and docs/classification.md.
package classify
