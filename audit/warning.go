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
	// training RMSE at that step (OverfitRatio or more: it fits training noise
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
	// UnboundedBlocks: Count training blocks are (almost) interpolated by
	// the model, a leverage eigenvalue within Bound (leverageLimit) of 1:
	// their own leave-out residuals are unbounded (+Inf), never clipped.
	// Figure is the largest leverage eigenvalue met.
	UnboundedBlocks WarningCode = "unbounded-blocks"
	// HighLeverage: at row Step the training blocks' mean own leverage is
	// Figure, above Bound: the model fits a large part of each training
	// value there, and intervals built from the trained model are
	// expected to under-cover at that step.
	HighLeverage WarningCode = "high-leverage"
	// RefitNotConverged: Count of the exact re-fits (Figure of them drawn,
	// as a number) stopped at the iteration cap (Ratio) or the time budget
	// (Bound, seconds; 0 for none) before converging (re-fits that ran;
	// those never started are RefitNotRun); they are left out of the
	// agreement figures.
	RefitNotConverged WarningCode = "refit-not-converged"
	// RefitNotRun: Count of the exact re-fits (Figure of them drawn)
	// were never started because the time budget (Bound, seconds) was
	// spent; they are left out of the agreement figures.
	RefitNotRun WarningCode = "refit-not-run"
	// FullRefitNotConverged: re-training on all the data stopped after
	// Count iterations at the iteration cap or its share of the time
	// budget with gradient norm Figure, above the convergence bound
	// Bound; the block re-fits were then tilted (RetrainResult.Tilted)
	// and every exact change is measured from theta_hat.
	FullRefitNotConverged WarningCode = "full-refit-not-converged"
	// CoverageDrift: over long series (OverTime.Long), coverage in the
	// last third of the test steps is Figure against Bound in the first
	// third, apart by more than their dependence-aware sampling tolerance
	// Ratio, over Count values: the test data are not exchangeable with
	// the training data along time.
	CoverageDrift WarningCode = "coverage-drift"
	// SerialCorrelation: over long series the errors y - f have lag-1
	// autocorrelation Figure within sequences, beyond Bound (2/sqrt of
	// the Count pairs): the values are serially dependent, so coverage
	// rests on fewer effective values than it counts.
	SerialCorrelation WarningCode = "serial-correlation"
	// TargetAsInput: on all Count training sequences a feature column
	// equals the target at the first row a forecast is compared with
	// (datacheck.TargetAsInput): the model reads the value it forecasts,
	// as when a window's target sits on an extra row after the window.
	TargetAsInput WarningCode = "target-as-input"

	// The width warnings.

	// TooWide: the jackknife+ intervals' mean width is Figure times that
	// of the in-sample residual intervals (Ratio, their mean width), above
	// Bound (WideBound): intervals this much wider than the model's own
	// errors are uninformative, and usually a sign of a curvature that
	// amplifies the influence steps (an indefinite Hessian, too little
	// damping).
	TooWide WarningCode = "too-wide"
	// WiderThanCalibrated: the same against the split-conformal intervals
	// of a calibration set (Ratio, their mean width), whose coverage is
	// guaranteed: Figure times wider, above Bound.
	WiderThanCalibrated WarningCode = "wider-than-calibrated"
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
