// Package audit is the blockwise jackknife+ (DESIGN sections 3 to 6 and
// 8): from a trained model and its training data it estimates every
// leave-one-block-out model by influence, by default the Newton step on
// the leave-block-out objective theta_-b = theta_hat + (C - C_b)^-1
// grad L_b with C the damped Gauss-Newton matrix (Estimator Newton; the
// paper's infinitesimal jackknife, theta_hat + (C + lambda I)^-1 grad L_b,
// is Estimator Infinitesimal), collects the leave-one-block-out residuals
// with real forward passes, and gives every forecast of new sequences a
// jackknife+ interval; on labelled data it measures coverage, interval
// length, precision of risk flags and the gap to naive in-sample
// intervals, and it can check influence against exact re-training. With a
// held-out calibration set (Options.Calibration) it adds split-conformal,
// Bonferroni and conformalized jackknife+ intervals with a finite-sample
// guarantee and compares every kind (conformal.go, DESIGN section 8).
//
// Run is the one entry point; it returns a Result that the reports
// package renders. The Result carries the audit's judgement as values
// (verdict.go): Result.Verdict (a level and its reasons, each with its
// figures), Conformal.Recommendation (the kind of interval to use), the
// column and ridge check (Diagnostics.Fit) and the damping sensitivity
// (Diagnostics.DampingSensitivity); every threshold of that judgement is
// a constant of this package, given once with its justification. The model must take one float input of features over
// time (batch-first or time-first) and optionally one integer input of
// sequence lengths, and give one forecast per step (possibly several
// horizons) or one per sequence.
//
// # Phases
//
// Run is an orchestrator over phase functions; each takes what it reads
// as arguments and returns what it produces, and warnings travel in
// return values. The immutable *problem (options after defaults, model
// and its IO, theta_hat, data sets, block scheme, batches) is the one
// value every phase shares.
//
//	prepare           validate, prepare     -> *problem
//	                  evaluate(problem)     -> *evaluation: test and calibration points
//	                                           with the trained model's predictions
//	block gradients   blockGradients        -> grad L_b per block (through *seqGrads,
//	                                           the per-sequence gradient machinery)
//	influence         estimate              -> *influence: theta_-b - theta_hat per
//	                                           block, own-block residuals and leverage
//	                                           (Newton), diagnostics, warnings
//	residuals         inSampleResiduals     -> in-sample residuals by forecast
//	                  blockResiduals        -> *looResiduals: leave-one-block-out
//	                                           residual entries by forecast
//	perturbed         perturbedPredictions  -> perturbed: every block's prediction
//	predictions                                at every evaluation point
//	limits            jackknifeLimits, naiveLimits, conformal -> limits per point
//	summary           summarize, kindSummary, calibrationCurve, perHorizon
//	                                        -> Summary, calibration curve, warnings
//	re-training       retrain (optional)    -> *RetrainResult, warnings
//
// The limits and summary phases are plain functions of points,
// per-block predictions and residual entries (intervals.go,
// conformal.go), tested on hand-worked examples without a model. They
// read the perturbed predictions one point at a time through the
// perturbed interface, so an influence implementation that never holds
// blocks × parameters or blocks × points (low-rank curvature, linearised
// test predictions f(x; theta_hat) + J_x delta_b) can feed them the same
// way as the forward passes do (predMatrix).
//
// With Solver LowRank (Auto's choice above AutoExactMax parameters when
// the dual form does not fit) the phases block gradients to perturbed
// predictions are one streaming path instead (scalable.go): curvature
// (a rank-k Gauss-Newton factor from at most curvatureMaxSeqs sequences),
// a block pass over chunks of training sequences (MapBlock: k numbers
// and the own residuals per block; CombineBlocks), a refinement of the
// Newton steps of the blocks whose low-rank leverage exceeds
// RefineLeverage by preconditioned CG (refine.go, within a budget of
// curvature products), a pass over the test
// points (MapPoints), and linearised perturbed predictions from the block
// table (linearPreds, BlockTable.Shifts), read by the same limits and
// summary phases. Its memory does not grow with blocks × parameters or
// blocks × points.
//
// # Distributed form
//
// The streaming path's numeric steps are plain functions over values
// that encode as they are (structs of exported slices, no pointers into
// graphs), so that the same functions can run as an Apache Beam pipeline
// (Go SDK, on Flink, Spark or Dataflow) when one machine is not enough:
//
//	map       MapBlock, per chunk of training sequences (a ParDo): a
//	          block's step delta_b (P floats, never kept) and own
//	          residuals in, a BlockRecord of k + F numbers out
//	map       MapPoints, per chunk of test sequences (a ParDo): output-
//	          Jacobian rows in, PointRecords of k + 2 numbers out
//	combine   CombineBlocks: the records concatenated in block order
//	          (Flatten, then CombineGlobally) into one BlockTable, sent to
//	          the finalize workers as a side input; the total gradient of
//	          the stationarity check is a sum (CombinePerKey)
//	finalize  FinalizeLimits, per chunk of test points (a ParDo with the
//	          table as side input): the shifts of every block at those
//	          points as one matrix product, then the jackknife+ limits by
//	          exact selection
//
// The curvature factor (hvp.LowRank: k rows of P floats, the Ritz values,
// the damping and the complement constant) is computed once and broadcast;
// its products are themselves sums over chunks of sequences.
//
// Conventions the package fixes where DESIGN leaves room:
//   - Sequences are evaluated in groups of equal length, so no padding ever
//     enters a forecast, of at most 512 sequences (wholeBatch), so that no
//     curvature product runs one huge program.
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
