// Package audit is the blockwise infinitesimal jackknife (DESIGN sections
// 3 to 6): from a trained model and its training data it estimates every
// leave-one-block-out model by influence, theta_-b = theta_hat +
// (C + lambda I)^-1 grad L_b, collects the leave-one-block-out residuals
// with real forward passes, and gives every forecast of new sequences a
// jackknife+ interval; on labelled data it measures coverage, interval
// length, precision of risk flags and the gap to naive in-sample
// intervals, and it can check influence against exact re-training. With a
// held-out calibration set (Options.Calibration) it adds split-conformal,
// Bonferroni and conformalized jackknife+ intervals with a finite-sample
// guarantee and compares every kind (conformal.go, DESIGN section 8).
//
// Run is the one entry point; it returns a Result that the reports
// package renders. The model must take one float input of features over
// time (batch-first or time-first) and optionally one integer input of
// sequence lengths, and give one forecast per step (possibly several
// horizons) or one per sequence.
//
// Conventions the package fixes where DESIGN leaves room:
//   - Sequences are evaluated in groups of equal length, so no padding ever
//     enters a forecast.
//   - With interval blocks, every residual in a block's region is one
//     element of the sets V±, paired with that block's perturbed
//     prediction; the number m at a forecast is the number of such
//     residuals.
//   - Per-step metrics are indexed by the row at which the forecast is
//     made.
//   - Exact re-training measures each block's change from a re-fit of the
//     full loss, so that a model not quite at a minimum does not add the
//     same drift to every block.
package audit
