// Package audit is the blockwise jackknife+ (docs/design.md, sections 3
// to 10): from a trained model and its training data it estimates every
// leave-one-block-out model by influence, by default the Newton step on
// the leave-block-out objective theta_-b = theta_hat + (C - C_b)^-1
// grad L_b with C the damped Gauss-Newton matrix (Estimator Newton; the
// paper's infinitesimal jackknife, theta_hat + (C + lambda I)^-1 grad L_b,
// is Estimator Infinitesimal; interval and nested blocks iterate it with
// the exact leave-block-out gradient, newtoniter.go), collects the leave-one-block-out residuals,
// and gives every forecast of new sequences a jackknife+ interval; on labelled data it measures coverage, interval
// length, precision of risk flags and the gap to naive in-sample
// intervals, and it can check influence against exact re-training. With a
// held-out calibration set (Options.Calibration) it adds split-conformal,
// Bonferroni and conformalized jackknife+ intervals with a finite-sample
// guarantee and compares every kind (conformal.go; docs/design.md, section 6).
//
// Run is the one entry point; it returns a Result that the reports
// package renders. The Result carries the audit's judgement as values
// (verdict.go): Result.Verdict (a level and its reasons, each with its
// figures), Conformal.Recommendation (the kind of interval to use), the
// column and ridge check (Diagnostics.Fit, a datacheck.FitCheck) and the
// damping sensitivity (Diagnostics.DampingSensitivity); every threshold of that judgement is
// a constant in policy.go, given once with its justification. The model must take one float input of features over
// time (batch-first or time-first) and optionally one integer input of
// sequence lengths, and give one forecast per step (possibly several
// horizons) or one per sequence.
//
// # Phases
//
// Run is one pipeline over phase functions; each takes what it reads
// as arguments and returns what it produces, and warnings travel in
// return values. The immutable *problem (options after defaults, model
// and its IO, theta_hat, data sets, block scheme, batches) is the one
// value every phase shares.
//
//	prepare           validate, prepare     -> *problem
//	                  evaluate(problem)     -> *evaluation: test and calibration points
//	                                           with the trained model's predictions
//	influence         solver.influence      -> *influence: diagnostics, warnings, and the
//	                                           estimated models as an influenceRep
//	residuals         influenceRep.residuals -> *looResiduals: leave-one-block-out
//	                                           residual entries by forecast, shifts
//	                  inSampleResiduals     -> in-sample residuals by forecast
//	limits            influenceRep.limits   -> jackknife+ limits per point, calibration curve
//	                  naiveLimits, conformal -> in-sample and calibrated limits
//	                  adaptiveResult (opt.) -> *adaptive.Result: ACI, AgACI, NexCP and rolling
//	                                           limits along each series in time order
//	                                           (adaptive.go; package adaptive)
//	summary           summarize, kindSummary, perHorizon
//	                                        -> Summary, warnings
//	re-training       retrain (optional)    -> *RetrainResult, warnings
//
// A solver (fit.go; what Options.Solver names) runs the influence
// phase and keeps the leave-one-block-out models in one of two
// representations behind the small influenceRep interface:
//
//	stepsRep   the dense solvers (exact, dual, CG, LiSSA): block gradients
//	           (blockGradients, through *seqGrads), one hvp.Factorize and
//	           solve (estimate), the Newton correction (newtonCorrection);
//	           every step delta_b in parameter space. Residuals and
//	           perturbed predictions are forward passes at theta_hat +
//	           delta_b (blockResiduals, chunkedLimits), the limits
//	           taken a chunk of evaluated sequences at a time
//	           (chunkedLimits: every block's model on a few dozen
//	           sequences, then their limits; the adaptive kinds' sets keep
//	           the whole matrix of perturbedPredictions).
//	tableRep   the LowRank solver (scalable.go): every step as k
//	           coordinates in a low-rank factor's basis with the block's
//	           own residuals (a table.BlockTable), Newton-refined where
//	           the low-rank leverage is suspicious (refine.go), and every
//	           evaluation point as k coordinates (table.PointRecord). The
//	           limits are table.FinalizeLimits over chunks of points, on
//	           the linearised predictions f(x; theta_hat) + J_x delta_b.
//
// What does not depend on the form exists once: the stationarity check
// (influence.stationarity), the curvature diagnostics
// (influence.curvature), the Newton step's algebra (newtonReduced), the
// leverage summary (influence.leverageDiagnostics), the selection of the
// limits (interval.JackknifePlus) and the coverage counts of the
// calibration curve (interval.CountCovered). The interval arithmetic and
// the metrics are package interval's, plain functions of values tested on
// hand-worked examples without a model; intervals.go and conformal.go
// gather the points' values for it and lay out its figures.
//
// # Distributed form
//
// The LowRank path's numeric steps are functions over plain values, and
// the in-process path calls exactly these, so that an executor (Apache
// Beam's Go SDK on Flink, Spark or Dataflow: cmd/audit-beam, a module of
// its own; Options.Executor) can run them elsewhere when one machine is
// not enough. Package table holds the seam, with no engine imported:
// the block table, the three stages (blocks, points, finalize: its
// package documentation), the executor and the chunks' raw little-endian
// encodings. engine.go is the worker's half (Worker and its Runner: the
// gradients and Jacobian rows of a chunk's sequences, then the map steps
// mapBlockChunk and table.MapPoints, which the in-process passes call on
// the streamed rows) and the driver's (execute).
//
// The driver keeps what is not a map: the curvature factor (its products
// are sums over the curvature subsample, hundreds of them: one pipeline
// run each would cost more than the products), the probes, the leverage
// rule, the refinement of suspicious Newton steps, the combine (the
// records in block order; the gradient sums folded in chunk order, the
// coverage counts summed as integers) and the summary, so that the
// result does not depend on the order the chunks run in. A worker builds
// the problem itself (NewWorker, from the driver's model, data and
// options, named by a table.WorkerSpec) and checks it against the
// driver's digest.
//
// Conventions the package fixes where the method leaves room (docs/design.md,
// sections 1.1, 5.2, 8.1 and 9):
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
