package audit

import (
	"fmt"
	"time"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/audit/table"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/phases"
)

// Solver names the inverse-curvature method. Auto picks, with the
// Gauss-Newton curvature, Dual when the training set has no more loss
// terms than the model has parameters (and the dual form fits in memory,
// hvp.DualFits); else Exact up to AutoExactMax parameters, and above
// LowRank (with the Gauss-Newton curvature and sequence blocks) or
// conjugate gradients; unless audit/solvecost predicts another of exact,
// dual and low-rank much faster. SolverReason records why.
type Solver string

// Solvers.
const (
	Auto  Solver = "auto"
	Exact Solver = "exact"
	CG    Solver = "cg"
	LiSSA Solver = "lissa"
	// Dual is the exact Gauss-Newton solve in its dual (Woodbury) form,
	// from the N×P Jacobian of the loss terms and one N×N Cholesky
	// factor (hvp.Dual): exact, and cheap when N is below P.
	Dual Solver = "dual"
	// LowRank is the large-scale path (scalable.go): a low-rank plus
	// constant Gauss-Newton inverse (hvp.NewLowRank) from a subsample of
	// the training data, per-sequence gradients streamed chunk by chunk
	// and reduced to k numbers per block, and linearised perturbed
	// predictions f(x; theta_hat) + J_x delta_b computed in the rank-k
	// space. Memory does not grow with blocks × parameters or blocks ×
	// test points. Sequence blocks and the Gauss-Newton curvature only;
	// no exact re-training (Options.Retrain).
	LowRank Solver = "lowrank"
)

// SolverReason says why the audit used its solver (Setting.SolverReason).
type SolverReason string

// Solver reasons.
const (
	// ReasonChosen: Options.Solver named it.
	ReasonChosen SolverReason = "chosen"
	// ReasonFewerTerms: Auto chose Dual because the loss terms are no
	// more than the parameters and their Jacobian fits in memory.
	ReasonFewerTerms SolverReason = "fewer-terms"
	// ReasonSmallModel: Auto chose Exact, the model having at most
	// AutoExactMax parameters.
	ReasonSmallModel SolverReason = "small-model"
	// ReasonLargeModel: Auto chose LowRank (or CG, with the Hessian or
	// blocks other than sequences), the model having more than
	// AutoExactMax parameters and more loss terms than Dual takes.
	ReasonLargeModel SolverReason = "large-model"
	// ReasonPredicted: Auto chose another because audit/solvecost predicts it much faster.
	ReasonPredicted SolverReason = "predicted-faster"
)

// Estimator names how the leave-one-block-out parameters theta_-b are
// estimated from the trained model.
type Estimator string

// Estimators.
const (
	// Newton is the Newton step on the leave-block-out objective
	// (docs/design.md, section 4.5): theta_-b = theta + (C - C_b)^-1 grad L_b,
	// C_b the block's own Gauss-Newton term, through the Woodbury identity from
	// one factorisation of C; the block's own residuals get the leverage
	// correction of the linearised model. The default.
	Newton Estimator = "newton"
	// Infinitesimal is the paper's infinitesimal jackknife, theta_-b =
	// theta + C^-1 grad L_b (docs/design.md, section 4.7), with residuals from
	// a forward pass at theta_-b: to reproduce the paper.
	Infinitesimal Estimator = "infinitesimal"
)

// Options configure an audit. The zero value (with Layout set) runs the
// defaults: alpha 0.1, sequence blocks, the Newton leave-one-block-out
// estimator with the Gauss-Newton curvature and its default damping, the
// automatic solver, squared error.
type Options struct {
	Layout graph.Layout
	// Inputs names, by model input, the data columns that fill it, in the
	// order the input takes them: {"x_cat": {"store", "dow"}}. An input
	// not named here is filled by rule (modelio.IO's doc): integer sequence
	// lengths, a column named like the input, or, for the float input of
	// features, every column no other input takes.
	Inputs map[string][]string
	// Output is the forecast output, "y", or one column of its last axis,
	// "y:0" (modelio.ParseOutput); "" takes the model's first output
	// whole. The graph's first output must be the one named: load the
	// model with onnx.LoadOutput, which also drops what only other
	// outputs need.
	Output string
	// Horizons says that the last axis of the forecast output holds this
	// many horizons. With 0, a last axis of K > 1 values is taken as K
	// horizons and a note says so (unless the export names that axis as
	// one of horizons).
	Horizons int
	Align    string // where a many-to-one output's H values sit: "" or "after", or "last" (modelio.Config.Align)
	// TargetScale, when set, is {mean, std}: the model was trained on the
	// target scaled as (y - mean) / std and the data hold it in its own
	// units; forecasts, intervals, thresholds and reports are in those
	// units (modelio.Config.TargetScale). Ridge stays in the training's
	// units (the audit scales it by std², with the loss).
	TargetScale []float64

	Alpha       float64     // 0 means 0.1
	Blocks      blocks.Kind // sequence, interval or nested
	BlockLength int         // K for interval, nested and window blocks (0 for window blocks: chosen)
	// Window, when positive, audits a many-to-one model trained on the
	// sliding windows of long series: the training, test and calibration
	// series are cut into windows of this many rows, stride 1
	// (blocks.CutWindows), and the blocks are window blocks.
	Window int
	// Pooling chooses which leave-one-block-out residuals a forecast's
	// interval is built from ("" means PoolAuto; see Pooling), and
	// Warmup the rows at the start of every sequence that PoolRows keeps
	// by position (0: the block length K; negative: none). Run resolves
	// both: a Result's Setting says which pooling ran.
	Pooling Pooling
	Warmup  int
	// Restart starts every test sequence at row 0. Without it a test
	// sequence that continues a training sequence (the same id, steps
	// after its last) is run after that sequence's rows, from the state
	// they leave (blocks.Continue), and a note says which.
	Restart bool
	Solver  Solver // "" means Auto
	// Rank is k of the LowRank solver; 0 means clamp(P/4, 40, 200),
	// at most P (solvecost.Rank).
	Rank int
	// Estimator is "" (Newton), Newton or Infinitesimal.
	Estimator Estimator
	// NewtonSteps is the most Newton steps per block of the Newton
	// estimator (newtoniter.go): 1 is the one-step estimate; more iterate
	// with the exact leave-block-out gradient towards the leave-block-out
	// optimum. 0 means 20 for interval and nested blocks of at most 400
	// loss terms of a model at a stationary point, 1 for sequence blocks,
	// larger blocks and a model stopped early (stationarity ratio above
	// StationarityBound).
	NewtonSteps int
	Curvature   hvp.Curvature // zero value: Gauss-Newton
	// Damping is rho, relative to the mean eigenvalue; 0 means the
	// default for the curvature and the model's stationarity ratio (hvp.DefaultDampingFor).
	Damping float64
	Loss    hvp.Loss
	// Classify, for a binary classifier (Loss BinaryCrossEntropySigmoid), asks for
	// probability intervals, prediction sets and their figures; nil: none.
	Classify *classify.Options
	// Ridge is the L2 penalty (Ridge/2)|theta|^2 the model was trained
	// with, in the units of the summed loss (weight decay). The trained
	// parameters are stationary for the penalised loss, so its curvature
	// (H + Ridge I) and its gradient are the ones to use; block gradients
	// are unchanged. 0 for a model trained on the loss alone.
	Ridge float64
	// Params restricts the parameters (graph.ParamPattern syntax); ""
	// means every parameter.
	Params string
	// Low and High are the audit thresholds (nil: not audited).
	Low, High *float64
	// Retrain re-trains this many blocks exactly (drawn with Seed) and
	// compares with influence; a negative value re-trains every block.
	Retrain int
	// RetrainBudget bounds the wall time of all exact re-fits together
	// (0: no bound); RetrainMaxIter bounds the iterations of one re-fit
	// (0: 200 Newton or 20000 L-BFGS iterations). A re-fit stopped by
	// either is reported as not converged and left out of the agreement
	// figures.
	RetrainBudget  time.Duration
	RetrainMaxIter int
	// RetrainStart says where the block re-fits start: RetrainAuto (the
	// default), RetrainFull or RetrainWarm (see RetrainStart).
	RetrainStart RetrainStart
	// TrainBudget, when set, is how the model was trained: the estimate
	// becomes the early-stopping one (infinitesimal, at the damping of
	// refit.ProximalProblem.Damping; docs/design.md, "Models stopped
	// early") and Retrain re-fits with the budget, from TrainInit (the
	// parameters training started from) when set, else warm.
	TrainBudget *refit.Budget
	TrainInit   []float64
	Seed        uint64
	// Workers bounds the parallelism (0: GOMAXPROCS).
	Workers int
	// Memory is the LowRank solver's budget in bytes (0: membudget.Default):
	// it sizes the streaming chunks, not the result.
	Memory int64 `json:"-"`
	// DampingSensitivity re-runs the influence, residual and interval
	// phases with the damping multiplied and divided by 10 and reports how
	// far the intervals move (Diagnostics.DampingSensitivity, and a
	// verdict reason when they move by more than DampingShare). The exact
	// and dual solvers re-damp the audit's factorisation (no new curvature
	// or block gradients), but the solves, the Newton correction and the
	// perturbed forward passes run twice more, so it is asked for; the
	// command always asks.
	DampingSensitivity bool
	// Calibration is a held-out labelled set of sequences (nil: none),
	// exchangeable with the test sequences and disjoint from the training
	// ones: it adds split-conformal and conformalized jackknife+
	// intervals (docs/design.md, section 6; see conformal.go). It needs test
	// data.
	Calibration *blocks.Dataset `json:"-"`
	// CalibrationPool is how many calibration values a group of rows
	// needs before its rows stop being grouped with the next ones
	// (interval.GroupRows); 0: interval.GroupValues (19 at alpha 0.1),
	// never fewer than a finite quantile needs (docs/design.md, section 6.5).
	CalibrationPool int
	// Adaptive, when not nil, adds the intervals that adapt along time
	// (ACI, AgACI, NexCP, rolling conformal; adaptive.go).
	Adaptive *adaptive.Options
	// ModelPath is recorded in the result.
	ModelPath string
	// Progress, when set, is called as long phases advance.
	Progress func(Progress) `json:"-"`
	// Executor, when set, runs the LowRank solver's block pass, test
	// pass and limits elsewhere (engine.go; e.g. on Apache Beam); nil
	// runs them in process. The result is the same byte for byte.
	Executor table.Executor `json:"-"`

	// ownForward takes the Newton estimator's own-block residuals from a
	// forward pass at theta_-b instead of the linearised model (for the
	// package's measurements).
	ownForward bool
	// keepLinear keeps the linearised own residuals of interval and
	// nested blocks too (for the package's tests).
	keepLinear bool
	// leverageRule replaces LowRank's lowLeverage threshold when non-zero
	// (negative: always the per-block Jacobian branch; +Inf: never), for
	// the package's tests.
	leverageRule float64
}

// Progress reports the advance of one phase.
type Progress struct {
	Phase string
	Done  int
	Total int
	Note  string // when set, a line to show once: the solver's predicted time for the whole run
}

func (o *Options) withDefaults() (Options, error) {
	r := *o
	if r.Alpha == 0 {
		r.Alpha = 0.1
	}
	if !(r.Alpha > 0 && r.Alpha < 0.5) {
		return r, fmt.Errorf("audit: alpha %g must be between 0 and 0.5", r.Alpha)
	}
	if _, err := ParsePooling(string(r.Pooling)); err != nil {
		return r, err
	}
	if r.Estimator == "" {
		r.Estimator = Newton
	}
	switch r.Estimator {
	case Newton, Infinitesimal:
	default:
		return r, fmt.Errorf("audit: unknown estimator %q (newton or infinitesimal)", r.Estimator)
	}
	if r.NewtonSteps < 0 {
		return r, fmt.Errorf("audit: %d Newton steps: must be 1 or more (0: the default)", r.NewtonSteps)
	}
	if r.RetrainBudget < 0 || r.RetrainMaxIter < 0 {
		return r, fmt.Errorf("audit: the re-training budget (%v, %d iterations) must not be negative", r.RetrainBudget, r.RetrainMaxIter)
	}
	switch r.RetrainStart {
	case "":
		r.RetrainStart = RetrainAuto
	case RetrainAuto, RetrainFull, RetrainWarm:
	default:
		return r, fmt.Errorf("audit: unknown re-fit start %q (auto, full or warm)", r.RetrainStart)
	}
	if r.Solver == "" {
		r.Solver = Auto
	}
	if r.Solver != Auto {
		if _, err := solverFor(r.Solver); err != nil {
			return r, err
		}
	}
	if r.Rank < 0 {
		return r, errs.Fix([]Option{OptRank}, "audit: rank %d must not be negative", r.Rank)
	}
	if r.Layout != graph.BatchFirst && r.Layout != graph.TimeFirst {
		return r, errs.Fix([]Option{OptLayout}, "audit: the model's input layout is not known: batch-first or time-first")
	}
	if (r.Blocks == blocks.Intervals || r.Blocks == blocks.Nested) && r.BlockLength <= 0 {
		return r, fmt.Errorf("audit: %s blocks need a block length K >= 1", r.Blocks)
	}
	if r.Window < 0 {
		return r, errs.Fix([]Option{OptWindow}, "audit: window of %d rows: it must be positive", r.Window)
	}
	if r.Adaptive != nil {
		a, err := r.Adaptive.WithDefaults(r.Alpha)
		if err != nil {
			return r, err
		}
		r.Adaptive = &a
	}
	if r.Low != nil && r.High != nil && *r.Low >= *r.High {
		return r, fmt.Errorf("audit: the low threshold %g must be below the high threshold %g", *r.Low, *r.High)
	}
	return r, nil
}

func (o *Options) progress(phase string, done, total int) {
	if o.Progress != nil {
		o.Progress(Progress{Phase: phase, Done: done, Total: total})
	}
}

// clock times an audit's phases, announcing each to o.Progress as it
// begins.
func (o *Options) clock() *phases.Clock {
	return &phases.Clock{Announce: func(name string) { o.progress(name, 0, 0) }}
}

// ioConfig is what modelio needs of o to read the model's inputs and output.
func ioConfig(o *Options) modelio.Config {
	return modelio.Config{Layout: o.Layout, Inputs: o.Inputs, Output: o.Output, Horizons: o.Horizons, Align: o.Align, TargetScale: o.TargetScale, Classes: o.Loss.Grouped()}
}

// targetVar is std² of TargetScale (1 without one): the loss in the
// data's units is std² times the loss the model was trained on, and so
// must the ridge be.
func (o *Options) targetVar() float64 {
	if len(o.TargetScale) != 2 {
		return 1
	}
	return o.TargetScale[1] * o.TargetScale[1]
}
