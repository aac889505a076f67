package audit

import (
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/internal/phases"
)

// Result is everything an audit found, in one value that the reports
// render. Limits are float64 and may be ±Inf (docs/design.md, section 5.3:
// infinite limits are reported, never clipped); renderers decide how to show
// them. It has no JSON encoding of its own: the schema is package reports'
// (reports.WriteJSON), which writes non-finite numbers as null.
type Result struct {
	Model   ModelInfo
	Setting Setting
	Summary *Summary // nil without labelled evaluation data
	Diag    Diagnostics
	// Sequences are the evaluated sequences (the test set, or the
	// training set in a self-audit) with an interval at every step.
	Sequences []SequenceResult
	// SelfAudit is true when no test data was given: each training
	// sequence's intervals come from the other blocks (leave one sequence
	// out), and the metrics describe the training set.
	SelfAudit bool
	// Calibration is coverage against nominal level for alpha from 0.05
	// to 0.5, from the same residuals (nil without labels).
	Calibration []interval.CalibrationPoint
	// Retrain compares influence with exact re-training (nil unless
	// asked for).
	Retrain *RetrainResult
	// Conformal holds the intervals calibrated on a held-out set (nil
	// without Options.Calibration).
	Conformal *Conformal
	// Adaptive holds the intervals that adapt along time (nil without
	// Options.Adaptive).
	Adaptive *adaptive.Result
	// Classification judges a classifier's sets and probabilities (nil
	// without Options.Classify).
	Classification *classify.Summary
	// Verdict is the audit's judgement of its intervals, with its
	// reasons (Judge). Run and Predict always set it, as they set
	// Conformal.Recommendation: package reports only renders them.
	Verdict Verdict
}

// ModelInfo describes the audited model.
type ModelInfo struct {
	Path       string
	Opset      int
	Layout     string
	Features   int
	Horizons   int
	ManyToOne  bool
	Params     int
	ParamNames []string
	// Inputs says what fills each input of the model; Output is the
	// forecast output, with the column taken ("y:0") if one is.
	Inputs []modelio.InputInfo
	Output string
	// Assumed says what the audit assumed about the output that nothing
	// in the model or the options said (also among Setting.Notes, which
	// the reports print).
	Assumed []string
}

// Setting records the options the audit ran with, after defaults.
type Setting struct {
	Alpha       float64
	Blocks      string
	BlockLength int
	NumBlocks   int
	// Pooling is the pooling of residuals that ran ("position" or
	// "rows"), and Warmup its warm-up rows (PoolRows).
	Pooling string
	Warmup  int
	Solver  string
	// SolverReason is why the solver was used (a SolverReason), and
	// LossTerms the training data's loss terms, N, the figure it
	// compares with the parameter count.
	SolverReason string
	// SolverPrediction is Auto's predicted cost of each solver when it mattered.
	SolverPrediction string
	LossTerms        int
	Estimator        string // newton or infinitesimal
	Curvature        string
	Damping          float64
	Loss             string
	Ridge            float64
	Seed             uint64
	TrainFile        string
	TestFile         string
	TrainSeqs        int
	TestSeqs         int
	Notes            []string
	// Windows says, for window blocks (Options.Window), how the windows
	// were cut and how long the blocks are, and why (also among Notes).
	Windows       string
	Low           *float64
	High          *float64
	NominalCover  float64 // 1 - alpha
	GuaranteedMin float64 // 1 - 2 alpha
}

// Summary holds the metrics (docs/design.md, section 8) on labelled data.
type Summary struct {
	Coverage        float64
	CoveragePerStep []float64
	PointsPerStep   []int // labelled values per step (row)
	JointCoverage   float64
	MeanLength      float64 // over finite intervals
	LengthPerStep   []float64
	Infinite        int
	Points          int // labelled (sequence, step, horizon) evaluated
	RMSE            float64
	RMSEPerStep     []float64
	IntervalScore   float64 // Winkler score at alpha, mean over finite intervals
	Alpha           float64
	Audit           interval.Audit
	// Naive is the same set of metrics for the in-sample-residual
	// intervals (prediction ± the per-step quantile of training
	// residuals), and Gap how much wider (+) or narrower the jackknife+
	// intervals are, overall and per step.
	Naive      NaiveSummary
	Gap        float64
	GapPerStep []float64
	// CoveragePerHorizon, LengthPerHorizon (mean over finite intervals)
	// and PointsPerHorizon (labelled values) are indexed by horizon h,
	// the forecasts of row t+h; nil for a model with one horizon.
	CoveragePerHorizon []float64
	LengthPerHorizon   []float64
	PointsPerHorizon   []int
	// Beyond summarises the forecasts at steps no training sequence
	// reaches, which every figure above leaves out (nil when none).
	Beyond *Beyond
	// OverTime is the coverage along time: the dependence-aware
	// tolerance, rolling and per-sequence coverage, drift and serial
	// correlation (nil without labelled values).
	OverTime *adaptive.OverTime
}

// NaiveSummary are the metrics of the in-sample-residual intervals.
type NaiveSummary struct {
	Coverage        float64
	CoveragePerStep []float64
	MeanLength      float64
	LengthPerStep   []float64
}

// SequenceResult holds the intervals of one evaluated sequence.
type SequenceResult struct {
	ID    string
	Steps []StepResult
}

// StepResult is the interval of one forecast: made at row T (its step
// value Step) for horizon H, i.e. for the target of row T+H.
type StepResult struct {
	Row        int
	Step       float64
	Horizon    int
	Prediction float64
	Lower      float64
	Upper      float64
	Target     *float64
	NaiveLower float64
	NaiveUpper float64
	M          int // number of leave-one-block-out residuals used
	// Conformal holds the limits calibrated on the held-out set (nil
	// without one).
	Conformal *interval.StepConformal
	// Class is a classifier's forecast: probabilities, their interval and
	// prediction sets (nil for a regression audit).
	Class *classify.Forecast
	// Adaptive holds the limits that adapt along time (nil without
	// Options.Adaptive).
	Adaptive *adaptive.Step
}

// Diagnostics say how far to trust the influence approximation.
type Diagnostics struct {
	// GradNorm is |grad L(theta_hat)|, BlockGradMedian the median of the
	// per-block |grad L_b|; Stationarity is their ratio. A large ratio
	// means the model is far from a stationary point of its loss.
	GradNorm        float64
	BlockGradMedian float64
	Stationarity    float64
	// Solver report: damping used, trace, extreme eigenvalues (exact
	// solver), iterations and worst residual.
	Lambda      float64
	Trace       float64
	MinEig      float64
	MaxEig      float64
	Iterations  int
	MaxResidual float64
	// Rank, Products and CurvatureSequences describe the LowRank
	// solver's factor: its rank k, the curvature-vector products it took
	// and the training sequences its curvature came from (a subsample
	// when fewer than Setting.TrainSeqs); 0 for the other solvers.
	Rank               int
	Products           int
	CurvatureSequences int
	// LeverageEstimate is the LowRank solver's estimate of the mean own
	// leverage (from a few training sequences' Jacobian rows), and
	// LeverageRule the rule it chose from it: "per-block" (Newton or
	// linearised own residuals from every block's Jacobian rows) or
	// "in-sample" (below 0.01: infinitesimal steps and in-sample own
	// residuals). Empty for the other solvers.
	LeverageEstimate float64
	LeverageRule     string
	// RefinedBlocks counts the blocks whose Newton step the LowRank
	// solver re-solved by conjugate gradients because their low-rank
	// leverage was suspicious (a leverage eigenvalue above
	// RefineLeverage; the low-rank inverse can overestimate it), RefineSkipped those it left
	// at the low-rank values for its budget of curvature products, and
	// RefineProducts the products it took. UnboundedBlocks counts the
	// unbounded blocks after it. 0 for the other solvers.
	RefinedBlocks  int
	RefineSkipped  int
	RefineProducts int
	// NewtonIteration is what the iterated Newton estimator did (nil when
	// it took one step per block; see Options.NewtonSteps).
	NewtonIteration *NewtonIteration
	// NegativeEigenvalues counts the curvature's eigenvalues below
	// -lambda (exact solver): non-zero only for an indefinite Hessian.
	NegativeEigenvalues int
	// LeveragePerStep is, per row (step), the mean over the training
	// blocks' own terms at that row of their leverage, the diagonal of
	// Lambda_b^1/2 J_b (C + lambda I)^-1 J_b^T Lambda_b^1/2
	// (docs/design.md, section 4.5): in [0, 1), the fraction of a term's own
	// residual that the trained model absorbs. Nil for the infinitesimal
	// estimator.
	LeveragePerStep []float64
	// UnboundedBlocks counts the blocks the model almost interpolates
	// (a leverage eigenvalue within leverageLimit of 1): their own
	// leave-out residuals are unbounded (+Inf), never clipped.
	UnboundedBlocks int
	// UnboundedLabels are the labels of those blocks.
	UnboundedLabels []string
	// InfluenceNorms are |theta_-b - theta_hat| per block (for a
	// histogram); Influential the largest, with block labels.
	InfluenceNorms []float64
	Influential    []InfluenceEntry
	Warnings       []Warning
	Phases         []Phase
	// Fit checks the column mapping and the ridge against the training
	// data (fit.go); DampingSensitivity is how much the intervals move
	// with the damping (damping.go; nil without labelled data).
	Fit                *datacheck.FitCheck
	DampingSensitivity *DampingSensitivity
	// EarlyStop is how the early-stopping estimate's damping was chosen
	// (nil without Options.TrainBudget).
	EarlyStop *refit.Proximal
	// Scheme is the advice on the block scheme from the training data's
	// shape and the serial correlation of its residuals (scheme.go).
	Scheme *datacheck.SchemeAdvice
}

// InfluenceEntry is one block and the size of its influence.
type InfluenceEntry struct {
	Block string
	Norm  float64
	// PredShift is the mean absolute change of its own sequence's
	// predictions when the block is left out.
	PredShift float64
}

// Phase is the wall and CPU time of one phase of the audit
// (Diagnostics.Phases).
type Phase = phases.Phase

// RefitOutcome is what became of one exact re-fit.
type RefitOutcome string

// The outcomes of an exact re-fit.
const (
	OutcomeConverged    RefitOutcome = "converged"
	OutcomeNotConverged RefitOutcome = "not converged"    // ran and stopped at the iteration cap or the deadline
	OutcomeNotRun       RefitOutcome = "not run (budget)" // never started: the time budget was spent
)

// RetrainResult compares influence estimates with exact re-training on a
// set of blocks. Only the re-fits that converged enter the agreement
// figures (means, correlation, coverage, lengths); the per-block lists
// cover every block drawn.
type RetrainResult struct {
	// Estimator is the estimator compared with (Setting.Estimator).
	Estimator string
	Blocks    []string
	// Converged per block: the re-fit reached a gradient norm below 1e-4
	// times the median block gradient before the iteration cap and the
	// time budget. Outcomes says what happened to each block's re-fit;
	// NotConverged counts the re-fits that ran and stopped at the
	// iteration cap or the deadline, NotRun those never started because
	// the time budget was spent (their Iterations are 0).
	Converged    []bool
	Outcomes     []RefitOutcome
	NotConverged int
	NotRun       int
	// FullIterations and FullGrad are the iterations and final gradient
	// norm of the re-fit on all the data. Tilted says that it did not
	// converge, so the block re-fits minimised their loss minus the full
	// gradient at theta_hat (times theta) and the exact changes are
	// measured from theta_hat (audit/retrain.go says why).
	FullIterations int
	FullGrad       float64
	Tilted         bool
	// Warm says that the full re-fit was not run (RetrainWarm, or
	// RetrainAuto on a model not at a stationary point): the block
	// re-fits were tilted and warm-started from theta_hat.
	Warm bool
	// Budget is the training budget the re-fits re-trained with
	// (Options.TrainBudget; "": re-fits to a stationary point).
	Budget string
	// Cosine per block between theta_exact - theta_hat and the influence
	// step; MeanCosine and MinCosine summarise it.
	Cosine     []float64
	MeanCosine float64
	MinCosine  float64
	// NormRatio per block |influence step| / |exact step|.
	NormRatio []float64
	// PredCorrelation is the correlation, over the re-trained blocks and
	// the evaluated points, of the prediction changes under exact and
	// influence parameters.
	PredCorrelation float64
	// Coverage and mean length of jackknife+ intervals built from the
	// re-trained blocks only, with exact and with influence parameters.
	ExactCoverage     float64
	InfluenceCoverage float64
	ExactLength       float64
	InfluenceLength   float64
	// Iterations and final gradient norm of each re-fit.
	Iterations []int
	FinalGrad  []float64
}
