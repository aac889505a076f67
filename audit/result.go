package audit

// Result is everything an audit found, in one value that the reports
// render. Limits are float64 and may be ±Inf (DESIGN section 5: infinite
// limits are reported, never clipped); renderers decide how to show them.
type Result struct {
	Model   ModelInfo   `json:"model"`
	Setting Setting     `json:"setting"`
	Summary *Summary    `json:"summary,omitempty"` // nil without labelled evaluation data
	Diag    Diagnostics `json:"diagnostics"`
	// Sequences are the evaluated sequences (the test set, or the
	// training set in a self-audit) with an interval at every step.
	Sequences []SequenceResult `json:"sequences"`
	// SelfAudit is true when no test data was given: each training
	// sequence's intervals come from the other blocks (leave one sequence
	// out), and the metrics describe the training set.
	SelfAudit bool `json:"self_audit"`
	// Calibration is coverage against nominal level for alpha from 0.05
	// to 0.5, from the same residuals (nil without labels).
	Calibration []CalibrationPoint `json:"calibration,omitempty"`
	// Retrain compares influence with exact re-training (nil unless
	// asked for).
	Retrain *RetrainResult `json:"retrain,omitempty"`
	// Conformal holds the intervals calibrated on a held-out set (nil
	// without Options.Calibration).
	Conformal *Conformal `json:"conformal,omitempty"`
}

// ModelInfo describes the audited model.
type ModelInfo struct {
	Path       string   `json:"path,omitempty"`
	Opset      int      `json:"opset"`
	Layout     string   `json:"layout"`
	Features   int      `json:"features"`
	Horizons   int      `json:"horizons"`
	ManyToOne  bool     `json:"many_to_one"`
	Params     int      `json:"parameters"`
	ParamNames []string `json:"parameter_tensors"`
}

// Setting records the options the audit ran with, after defaults.
type Setting struct {
	Alpha       float64 `json:"alpha"`
	Blocks      string  `json:"blocks"`
	BlockLength int     `json:"block_length,omitempty"`
	NumBlocks   int     `json:"num_blocks"`
	Solver      string  `json:"solver"`
	// SolverReason is why the solver was used (a SolverReason), and
	// LossTerms the training data's loss terms, N, the figure it
	// compares with the parameter count.
	SolverReason  string   `json:"solver_reason"`
	LossTerms     int      `json:"loss_terms"`
	Estimator     string   `json:"estimator"` // newton or infinitesimal
	Curvature     string   `json:"curvature"`
	Damping       float64  `json:"damping"`
	Loss          string   `json:"loss"`
	Ridge         float64  `json:"ridge,omitempty"`
	Seed          uint64   `json:"seed"`
	TrainFile     string   `json:"train_file"`
	TestFile      string   `json:"test_file,omitempty"`
	TrainSeqs     int      `json:"train_sequences"`
	TestSeqs      int      `json:"test_sequences"`
	Notes         []string `json:"notes,omitempty"`
	Low           *float64 `json:"low,omitempty"`
	High          *float64 `json:"high,omitempty"`
	NominalCover  float64  `json:"nominal_coverage"`    // 1 - alpha
	GuaranteedMin float64  `json:"guaranteed_coverage"` // 1 - 2 alpha
}

// Summary holds the metrics of DESIGN section 6 on labelled data.
type Summary struct {
	Coverage        float64   `json:"coverage"`
	CoveragePerStep []float64 `json:"coverage_per_step"`
	PointsPerStep   []int     `json:"points_per_step"` // labelled values per step (row)
	JointCoverage   float64   `json:"joint_coverage"`
	MeanLength      float64   `json:"mean_length"` // over finite intervals
	LengthPerStep   []float64 `json:"length_per_step"`
	Infinite        int       `json:"infinite_intervals"`
	Points          int       `json:"points"` // labelled (sequence, step, horizon) evaluated
	RMSE            float64   `json:"rmse"`
	RMSEPerStep     []float64 `json:"rmse_per_step"`
	IntervalScore   float64   `json:"interval_score"` // Winkler score at alpha, mean over finite intervals
	Alpha           float64   `json:"alpha"`
	Audit           Audit     `json:"audit"`
	// Naive is the same set of metrics for the in-sample-residual
	// intervals (prediction ± the per-step quantile of training
	// residuals), and Gap how much wider (+) or narrower the jackknife+
	// intervals are, overall and per step.
	Naive      NaiveSummary `json:"naive"`
	Gap        float64      `json:"length_gap"`
	GapPerStep []float64    `json:"length_gap_per_step"`
	// CoveragePerHorizon, LengthPerHorizon (mean over finite intervals)
	// and PointsPerHorizon (labelled values) are indexed by horizon h,
	// the forecasts of row t+h; nil for a model with one horizon.
	CoveragePerHorizon []float64 `json:"coverage_per_horizon,omitempty"`
	LengthPerHorizon   []float64 `json:"length_per_horizon,omitempty"`
	PointsPerHorizon   []int     `json:"points_per_horizon,omitempty"`
}

// NaiveSummary are the metrics of the in-sample-residual intervals.
type NaiveSummary struct {
	Coverage        float64   `json:"coverage"`
	CoveragePerStep []float64 `json:"coverage_per_step"`
	MeanLength      float64   `json:"mean_length"`
	LengthPerStep   []float64 `json:"length_per_step"`
}

// Audit holds precision and recall of the risk flags.
type Audit struct {
	Low  *Threshold `json:"low,omitempty"`
	High *Threshold `json:"high,omitempty"`
}

// Threshold is the audit of one risk threshold (DESIGN section 6): a
// value is flagged when its interval reaches beyond the threshold (lower <
// low, or upper > high); precision is the fraction of flags that are
// real, recall the fraction of real cases flagged.
type Threshold struct {
	Threshold float64 `json:"threshold"`
	Precision float64 `json:"precision"` // NaN when nothing is flagged
	Recall    float64 `json:"recall"`    // NaN when no real case
	Flagged   int     `json:"flagged"`
	True      int     `json:"true_positives"`
	Actual    int     `json:"actual"` // values actually beyond the threshold
}

// CalibrationPoint is one point of the calibration curve.
type CalibrationPoint struct {
	Alpha    float64 `json:"alpha"`
	Nominal  float64 `json:"nominal"`
	Coverage float64 `json:"coverage"`
}

// SequenceResult holds the intervals of one evaluated sequence.
type SequenceResult struct {
	ID    string       `json:"id"`
	Steps []StepResult `json:"steps"`
}

// StepResult is the interval of one forecast: made at row T (its step
// value Step) for horizon H, i.e. for the target of row T+H.
type StepResult struct {
	Row        int      `json:"-"`
	Step       float64  `json:"t"`
	Horizon    int      `json:"horizon"`
	Prediction float64  `json:"prediction"`
	Lower      float64  `json:"lower"`
	Upper      float64  `json:"upper"`
	Target     *float64 `json:"target,omitempty"`
	NaiveLower float64  `json:"naive_lower"`
	NaiveUpper float64  `json:"naive_upper"`
	M          int      `json:"m"` // number of leave-one-block-out residuals used
	// Conformal holds the limits calibrated on the held-out set (nil
	// without one).
	Conformal *StepConformal `json:"conformal,omitempty"`
}

// Diagnostics say how far to trust the influence approximation.
type Diagnostics struct {
	// GradNorm is |grad L(theta_hat)|, BlockGradMedian the median of the
	// per-block |grad L_b|; Stationarity is their ratio. A large ratio
	// means the model is far from a stationary point of its loss.
	GradNorm        float64 `json:"gradient_norm"`
	BlockGradMedian float64 `json:"block_gradient_median"`
	Stationarity    float64 `json:"stationarity_ratio"`
	// Solver report: damping used, trace, extreme eigenvalues (exact
	// solver), iterations and worst residual.
	Lambda      float64 `json:"lambda"`
	Trace       float64 `json:"trace"`
	MinEig      float64 `json:"min_eigenvalue"`
	MaxEig      float64 `json:"max_eigenvalue"`
	Iterations  int     `json:"max_iterations"`
	MaxResidual float64 `json:"max_residual"`
	// Rank, Products and CurvatureSequences describe the LowRank
	// solver's factor: its rank k, the curvature-vector products it took
	// and the training sequences its curvature came from (a subsample
	// when fewer than Setting.TrainSeqs); 0 for the other solvers.
	Rank               int `json:"rank,omitempty"`
	Products           int `json:"curvature_products,omitempty"`
	CurvatureSequences int `json:"curvature_sequences,omitempty"`
	// LeverageEstimate is the LowRank solver's estimate of the mean own
	// leverage (from a few training sequences' Jacobian rows), and
	// LeverageRule the rule it chose from it: "per-block" (Newton or
	// linearised own residuals from every block's Jacobian rows) or
	// "in-sample" (below 0.01: infinitesimal steps and in-sample own
	// residuals). Empty for the other solvers.
	LeverageEstimate float64 `json:"leverage_estimate,omitempty"`
	LeverageRule     string  `json:"leverage_rule,omitempty"`
	// RefinedBlocks counts the blocks whose Newton step the LowRank
	// solver re-solved by conjugate gradients because their low-rank
	// leverage was suspicious (a leverage eigenvalue above
	// RefineLeverage; the low-rank inverse can overestimate it), RefineSkipped those it left
	// at the low-rank values for its budget of curvature products, and
	// RefineProducts the products it took. UnboundedBlocks counts the
	// unbounded blocks after it. 0 for the other solvers.
	RefinedBlocks  int `json:"refined_blocks,omitempty"`
	RefineSkipped  int `json:"refine_skipped,omitempty"`
	RefineProducts int `json:"refine_products,omitempty"`
	// NegativeEigenvalues counts the curvature's eigenvalues below
	// -lambda (exact solver): non-zero only for an indefinite Hessian.
	NegativeEigenvalues int `json:"negative_eigenvalues"`
	// LeveragePerStep is, per row (step), the mean over the training
	// blocks' own terms at that row of their leverage, the diagonal of
	// Lambda_b^1/2 J_b (C + lambda I)^-1 J_b^T Lambda_b^1/2 (DESIGN
	// section 8): in [0, 1), the fraction of a term's own residual that the
	// trained model absorbs. Nil for the infinitesimal estimator.
	LeveragePerStep []float64 `json:"leverage_per_step,omitempty"`
	// UnboundedBlocks counts the blocks the model almost interpolates
	// (a leverage eigenvalue within LeverageLimit of 1): their own
	// leave-out residuals are unbounded (+Inf), never clipped.
	UnboundedBlocks int `json:"unbounded_blocks"`
	// UnboundedLabels are the labels of those blocks.
	UnboundedLabels []string `json:"unbounded_block_labels,omitempty"`
	// InfluenceNorms are |theta_-b - theta_hat| per block (for a
	// histogram); Influential the largest, with block labels.
	InfluenceNorms []float64        `json:"influence_norms"`
	Influential    []InfluenceEntry `json:"most_influential"`
	Warnings       []Warning        `json:"warnings,omitempty"`
	Phases         []Phase          `json:"phases"`
}

// InfluenceEntry is one block and the size of its influence.
type InfluenceEntry struct {
	Block string  `json:"block"`
	Norm  float64 `json:"norm"`
	// PredShift is the mean absolute change of its own sequence's
	// predictions when the block is left out.
	PredShift float64 `json:"prediction_shift"`
}

// Phase is the wall time of one phase of the audit.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// RetrainResult compares influence estimates with exact re-training on a
// set of blocks. Only the re-fits that converged enter the agreement
// figures (means, correlation, coverage, lengths); the per-block lists
// cover every block drawn.
type RetrainResult struct {
	// Estimator is the estimator compared with (Setting.Estimator).
	Estimator string   `json:"estimator"`
	Blocks    []string `json:"blocks"`
	// Converged per block: the re-fit reached a gradient norm below 1e-4
	// times the median block gradient before the iteration cap and the
	// time budget; NotConverged counts those that did not (or were not
	// started for lack of time).
	Converged    []bool `json:"converged"`
	NotConverged int    `json:"not_converged"`
	// Cosine per block between theta_exact - theta_hat and the influence
	// step; MeanCosine and MinCosine summarise it.
	Cosine     []float64 `json:"cosine"`
	MeanCosine float64   `json:"mean_cosine"`
	MinCosine  float64   `json:"min_cosine"`
	// NormRatio per block |influence step| / |exact step|.
	NormRatio []float64 `json:"norm_ratio"`
	// PredCorrelation is the correlation, over the re-trained blocks and
	// the evaluated points, of the prediction changes under exact and
	// influence parameters.
	PredCorrelation float64 `json:"prediction_change_correlation"`
	// Coverage and mean length of jackknife+ intervals built from the
	// re-trained blocks only, with exact and with influence parameters.
	ExactCoverage     float64 `json:"exact_coverage"`
	InfluenceCoverage float64 `json:"influence_coverage"`
	ExactLength       float64 `json:"exact_mean_length"`
	InfluenceLength   float64 `json:"influence_mean_length"`
	// Iterations and final gradient norm of each re-fit.
	Iterations []int     `json:"iterations"`
	FinalGrad  []float64 `json:"final_gradient_norm"`
}
