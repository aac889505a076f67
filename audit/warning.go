package audit

// WarningCode names a kind of finding that a reader must see before
// relying on the intervals. The audit records the figures; the reports
// put them into words.
type WarningCode string

// Warning codes. Each names the meaning of Warning's fields for it.
const (
	// NotStationary: the total gradient of the training loss is Figure
	// times the median block gradient, above Bound: the model is not at a
	// stationary point of the loss it is audited with (not trained to
	// convergence, or data, ridge or loss that do not match the training).
	NotStationary WarningCode = "not-stationary"
	// NonPositiveTrace: the curvature's trace is Figure (<= 0), so the
	// damping was taken from its magnitude and the Newton step is not a
	// descent step.
	NonPositiveTrace WarningCode = "non-positive-trace"
	// Indefinite: the damped curvature has Count eigenvalues below
	// -lambda (Bound = -lambda; Figure is the smallest eigenvalue): the
	// influence step is not a descent step in those directions.
	Indefinite WarningCode = "indefinite-curvature"
	// SolverTolerance: the iterative solver stopped at its iteration cap
	// on Count right-hand sides, the worst relative residual Figure above
	// the tolerance Bound.
	SolverTolerance WarningCode = "solver-tolerance"
	// StepCoverage: coverage at row Step is Figure over Count labelled
	// values, below the jackknife+ guarantee Bound by more than sampling
	// error. Ratio, when positive, is the model's test RMSE over its
	// training RMSE at that step (1.2 or more: it fits training noise
	// there).
	StepCoverage WarningCode = "step-coverage"
	// FullRefitMoved: re-training on all the data moved the parameters by
	// Figure, more than the median influence step Bound: the model was
	// not trained to convergence.
	FullRefitMoved WarningCode = "full-refit-moved"
	// PoorAgreement: influence and exact re-training agree poorly: mean
	// parameter cosine Figure below Bound over Count re-trained blocks;
	// Ratio is the correlation of their prediction changes.
	PoorAgreement WarningCode = "poor-agreement"
)

// Warning is one finding of an audit, as figures: what was measured
// (Figure), the bound it crossed (Bound), and where. Step is the row
// (0-based) a warning is about, or -1 when it is about the whole audit.
// Which of Count and Ratio a code uses is said at the code.
type Warning struct {
	Code   WarningCode
	Step   int
	Figure float64
	Bound  float64
	Count  int
	Ratio  float64
}

// warn records w in the result's diagnostics.
func (r *run) warn(w Warning) {
	r.res.Diag.Warnings = append(r.res.Diag.Warnings, w)
}
