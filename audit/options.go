package audit

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// Layout is how the model's feature input is laid out.
type Layout = graph.Layout

const (
	// BatchFirst is [batch, time, features] (PyTorch batch_first=True).
	BatchFirst = graph.BatchFirst
	// TimeFirst is [time, batch, features] (the ONNX RNN default).
	TimeFirst = graph.TimeFirst
)

// Solver names the inverse-curvature method; Auto picks exact up to
// AutoExactMax parameters and conjugate gradients above.
type Solver string

// Solvers.
const (
	Auto  Solver = "auto"
	Exact Solver = "exact"
	CG    Solver = "cg"
	LiSSA Solver = "lissa"
)

// AutoExactMax is the largest parameter count for which Auto chooses the
// exact (dense eigendecomposition) solver.
const AutoExactMax = 3000

// Options configure an audit. The zero value (with Layout set) runs the
// defaults of DESIGN: alpha 0.1, sequence blocks, the exact Hessian with
// the automatic solver, squared error.
type Options struct {
	Layout      Layout
	Alpha       float64     // 0 means 0.1
	Blocks      blocks.Kind // sequence, interval or nested
	BlockLength int         // K for interval and nested blocks
	Solver      Solver      // "" means Auto
	Curvature   hvp.Curvature
	Damping     float64 // rho, relative to the mean eigenvalue; 0 means hvp.DefaultDamping
	Loss        hvp.Loss
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
	Seed    uint64
	// Workers bounds the parallelism (0: GOMAXPROCS).
	Workers int
	// Calibration is a held-out labelled set of sequences (nil: none),
	// exchangeable with the test sequences and disjoint from the training
	// ones: it adds split-conformal and conformalized jackknife+
	// intervals (DESIGN section 8; see conformal.go). It needs test data.
	Calibration *blocks.Dataset
	// ModelPath is recorded in the result.
	ModelPath string
	// Progress, when set, is called as long phases advance.
	Progress func(Progress)
}

// Progress reports the advance of one phase.
type Progress struct {
	Phase string
	Done  int
	Total int
}

func (o *Options) withDefaults() (Options, error) {
	r := *o
	if r.Alpha == 0 {
		r.Alpha = 0.1
	}
	if !(r.Alpha > 0 && r.Alpha < 0.5) {
		return r, fmt.Errorf("audit: alpha %g must be between 0 and 0.5", r.Alpha)
	}
	if r.Solver == "" {
		r.Solver = Auto
	}
	switch r.Solver {
	case Auto, Exact, CG, LiSSA:
	default:
		return r, fmt.Errorf("audit: unknown solver %q (exact, cg, lissa or auto)", r.Solver)
	}
	if r.Layout != BatchFirst && r.Layout != TimeFirst {
		return r, fmt.Errorf("audit: the model's input layout is not known: give it (batch-first or time-first)")
	}
	if (r.Blocks == blocks.Intervals || r.Blocks == blocks.Nested) && r.BlockLength <= 0 {
		return r, fmt.Errorf("audit: %s blocks need a block length K >= 1", r.Blocks)
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
