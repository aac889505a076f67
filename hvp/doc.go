// Package hvp computes the weighted training loss of a model and its
// curvature, and applies the inverse of the damped curvature to many
// vectors (docs/design.md, sections 2 and 4).
//
// An Objective is L(theta; w) = sum_e w_e l(y_e, f_e(theta)) over batches
// of compiled programs (one per group of equal-length sequences, or one per
// sequence for per-sequence gradients). It gives the value, the gradient,
// exact Hessian-vector products (forward-over-reverse, no finite
// differences), Gauss-Newton-vector products, per-job gradients (one
// backward pass per sequence or per weighted part of one), per-example
// gradients of a batch from one batched pass (PerExampleGradients, for
// batches that say where their examples are; StreamPerExampleGradients hands
// them to a callback job by job, reusing the buffers, so that a pass over
// any number of sequences holds workers × batch × P floats) and the dense
// curvature matrix. Batches run in parallel with sums formed in a fixed
// order, so results do not depend on the number of workers.
//
// Solve returns (C + lambda I)^-1 b for many right-hand sides with one of
// the Method values, each a type in its own file: Exact (exact.go: the
// eigenvalues for the report and one P×P inverse by Cholesky or LU,
// applied as a matrix product), Dual (dual.go: the
// dual form for the Gauss-Newton matrix of models with fewer loss terms
// than parameters, one Cholesky factorisation of the N×N kernel of the
// terms' weighted output Jacobian, by Woodbury's identity; DualFits says
// when), CG (cg.go: conjugate gradients, MINRES for the Hessian in
// minres.go), or LiSSA (lissa.go: the paper's recursion with blockwise
// batch sampling). Factorize prepares the inverse once for many solves
// (a Factorization, whose SolveRecorded also records them in the
// Report). The dense factorisations stop between their LAPACK steps when
// the context ends (eigen.go). The damping is relative to the mean eigenvalue, lambda = rho
// trace(C) / P, and the Report says what was used and how well it
// converged, with plain-language warnings when the damped curvature is
// indefinite.
//
// A Factor is (C + lambda I)^-1 in whatever form it is held. LowRank is
// the form for models too large for the exact method: k Lanczos steps
// on Gauss-Newton-vector products (optionally on a subsample of batches,
// scaled to the whole) give C on a k-dimensional subspace, and one
// constant stands for C on the rest; it costs k plus a few dozen
// curvature-vector products and O(P k) memory, and its solves are two
// matrix products. For leave-one-out work its constant should be chosen
// for the inverse on output-Jacobian rows (LowRankOptions.InverseProbe):
// the leverage, and with it the own leave-out residuals, depends on it.
//
// # Files
//
// Each file has one job:
//
//   - objective.go: Objective and Batch, the weighted loss, its value and
//     gradient; loss.go: the per-term losses and their derivatives
//     (squared error, binary cross-entropy on probabilities and on
//     logits, and softmax cross-entropy, whose terms are groups of K
//     logits with a K×K curvature block);
//   - workers.go: per-worker buffers, reductions over batches in a fixed
//     order, and parallel jobs;
//   - gradients.go: gradients of parts of the loss, per job (Gradients)
//     and per example (PerExampleGradients, StreamPerExampleGradients);
//   - curvature.go: curvature-vector products (Apply, HVP, GNVP) and
//     trace estimates; dense.go: the dense curvature matrix;
//   - solve.go: Method, Options, Factorize and Solve, the Report;
//     exact.go, dual.go, cg.go (with minres.go), lissa.go: one Method
//     each; eigen.go: the interruptible dense eigendecomposition;
//     lowrank.go: the LowRank factor; tridiagonal.go: the
//     eigendecomposition of a Lanczos matrix (TridiagonalEigen), which
//     LowRank and audit's Newton step for large blocks share;
//   - errors.go: the options an error names as its fix (OptDamping, ...).
//
// The audit's block gradients enter through PerExampleGradients
// (gradients.go): exampleJob runs a batch forward and seeds the loss's
// cotangents (lossSeeds, objective.go), then graph.State.BackwardPerExample
// applies every operator's gradient rule (graph/kernels_diff.go), split by
// example.
package hvp
