package audit

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// This file holds the audit's judgement: how good its intervals are (the
// verdict, with its reasons). Its thresholds are in policy.go, each once
// with its justification. The reports only put these values into words.

// Level grades an audit's intervals, from best to worst: Good, Fair,
// Poor; Unmeasured when the evaluated data have no targets.
type Level string

// Verdict levels.
const (
	Good       Level = "good"
	Fair       Level = "fair"
	Poor       Level = "poor"
	Unmeasured Level = "none"
)

// worse returns the worse of two levels (Unmeasured counts as neither).
func worse(a, b Level) Level {
	rank := map[Level]int{Unmeasured: 0, Good: 1, Fair: 2, Poor: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// ReasonCode names one finding that went into a verdict. Each names the
// meaning of Reason's fields for it.
type ReasonCode string

// Reason codes, in the order a verdict lists them.
const (
	// NoTargets: the evaluated data have no targets, so coverage cannot
	// be measured (Level Unmeasured).
	NoTargets ReasonCode = "no-targets"
	// CoverageAbove: pooled coverage Figure over Count values is above the
	// target Bound (1 - alpha) by more than sampling error Ratio (Good).
	CoverageAbove ReasonCode = "coverage-above-target"
	// CoverageAt: coverage Figure is within sampling error Ratio of the
	// target Bound (Good).
	CoverageAt ReasonCode = "coverage-at-target"
	// CoverageBelowTarget: coverage Figure is below the target but within
	// sampling error Ratio of the jackknife+ bound 1 - 2 alpha or above it
	// (Bound, the bound; Fair).
	CoverageBelowTarget ReasonCode = "coverage-below-target"
	// CoverageBelowBound: coverage Figure is below the jackknife+ bound
	// Bound (1 - 2 alpha) by more than sampling error Ratio (Poor).
	CoverageBelowBound ReasonCode = "coverage-below-bound"
	// StepsBelowBound: Count steps have coverage below 1 - 2 alpha (Bound)
	// by more than their sampling error; Figure is the lowest (Fair). The
	// warnings (StepCoverage) name them.
	StepsBelowBound ReasonCode = "steps-below-bound"
	// StepsNearBound: the steps Steps have coverage below 1 - 2 alpha
	// (Bound) but within their sampling tolerance of it; Figure is the
	// lowest, Ratio that step's tolerance, Count how many. Named so that
	// no sentence says "not below" beside a figure below; it does not
	// change the level (Level Unmeasured).
	StepsNearBound ReasonCode = "steps-near-bound"
	// Wide: the intervals are Figure times as wide as a reference of
	// mean width Ratio (Count 0: the in-sample residual intervals; 1:
	// split conformal on a calibration set), above WideBound (Fair).
	Wide ReasonCode = "too-wide"
	// ManyUnbounded: a share Figure of the intervals is unbounded, above
	// Bound (unboundedPoor): they cover by construction and say nothing
	// (Poor). Count is the number of unbounded intervals.
	ManyUnbounded ReasonCode = "many-unbounded"
	// SomeUnbounded: a share Figure above Bound (unboundedFair) (Fair).
	SomeUnbounded ReasonCode = "some-unbounded"
	// WrongColumns: the model fits its training data better under another
	// column mapping (datacheck.FitCheck.BestAlternative): training RMSE
	// Ratio against Figure under the given one, below Bound (mappingGain)
	// times it (Poor).
	WrongColumns ReasonCode = "wrong-columns"
	// RidgeMismatch: the training gradient is explained better by the
	// ridge Ratio than by the given one, Bound: with it the gradient is
	// Figure times as large (below ridgeGain) (Fair).
	RidgeMismatch ReasonCode = "ridge-mismatch"
	// DampingSensitive: multiplying or dividing the damping by 10 moves
	// the mean width by a share Figure, above Bound (DampingShare): the
	// intervals depend on a setting that nothing pins down (Fair).
	DampingSensitive ReasonCode = "damping-sensitive"
	// Warned: Count warnings other than those above ask to be read before
	// the intervals are relied on (Fair).
	Warned ReasonCode = "warnings"
	// BeyondTraining: Count labelled test values lie at steps past every
	// training sequence's last target (from row Bound, 0-based): no
	// leave-one-out residual exists there, so their intervals are
	// unbounded; they are left out of the pooled figures and of the
	// verdict, and summarised apart (Summary.Beyond). Level unchanged.
	BeyondTraining ReasonCode = "beyond-training"
)

// Reason is one finding behind a verdict, as figures, and the level it
// allows: a verdict's level is the worst of its reasons'.
type Reason struct {
	Code   ReasonCode
	Level  Level // Unmeasured: informative, leaves the level as it is
	Figure float64
	Bound  float64
	Count  int
	Ratio  float64
	Steps  []int // rows (0-based) the reason is about, for the step codes
}

// Verdict is the audit's judgement of its intervals: a level and the
// reasons for it, each with its figures; package reports puts them into
// words. Reasons lists coverage first, then what lowers the level.
type Verdict struct {
	Level   Level
	Reasons []Reason
}

// Judge forms the verdict of a finished audit from its summary,
// warnings, column check and damping sensitivity. Run and Predict store it
// in Result.Verdict.
func Judge(res *Result) Verdict {
	v := Verdict{Level: Unmeasured}
	add := func(r Reason) {
		v.Reasons = append(v.Reasons, r)
		v.Level = worse(v.Level, r.Level)
	}
	s := res.Summary
	if s == nil {
		add(Reason{Code: NoTargets, Level: Unmeasured})
	} else {
		add(coverageReason(s))
	}
	if s != nil && s.Beyond != nil && s.Beyond.Labelled > 0 {
		add(Reason{Code: BeyondTraining, Level: Unmeasured, Count: s.Beyond.Labelled, Bound: float64(s.Beyond.FromRow)})
	}
	others := 0
	var steps []Warning
	for _, w := range res.Diag.Warnings {
		switch w.Code {
		case StepCoverage:
			steps = append(steps, w)
		case TooWide, WiderThanCalibrated:
			r := Reason{Code: Wide, Level: Fair, Figure: w.Figure, Bound: w.Bound, Ratio: w.Ratio}
			if w.Code == WiderThanCalibrated {
				r.Count = 1
			}
			add(r)
		case NotStationary:
			// Said once, by the column and ridge checks (below) or as a
			// diagnostic: on its own it is what mini-batch optimisers leave.
		default:
			others++
		}
	}
	if len(steps) > 0 && s != nil {
		r := Reason{Code: StepsBelowBound, Level: Fair, Figure: math.Inf(1), Bound: steps[0].Bound, Count: len(steps)}
		for _, w := range steps {
			r.Figure = math.Min(r.Figure, w.Figure)
			r.Steps = append(r.Steps, w.Step)
		}
		add(r)
	}
	if s != nil {
		if r, ok := stepsNearBound(s); ok {
			add(r)
		}
	}
	if s != nil && s.Points > 0 && s.Infinite > 0 {
		share := float64(s.Infinite) / float64(s.Points)
		switch {
		case share > unboundedPoor:
			add(Reason{Code: ManyUnbounded, Level: Poor, Figure: share, Bound: unboundedPoor, Count: s.Infinite})
		case share > unboundedFair:
			add(Reason{Code: SomeUnbounded, Level: Fair, Figure: share, Bound: unboundedFair, Count: s.Infinite})
		}
	}
	if n, inf := unbounded(res.Sequences); (s == nil || s.Points == 0) && n > 0 && inf == n {
		add(Reason{Code: ManyUnbounded, Level: Poor, Figure: 1, Bound: unboundedPoor, Count: n})
	}
	if f := res.Diag.Fit; f != nil {
		if b := f.BestAlternative(); b != nil && b.RMSE < mappingGain*f.RMSE {
			add(Reason{Code: WrongColumns, Level: Poor, Figure: f.RMSE, Ratio: b.RMSE, Bound: mappingGain})
		} else if ridgeMismatch(f) {
			add(Reason{Code: RidgeMismatch, Level: Fair, Figure: f.FittedGradNorm / f.GradNorm, Bound: f.Ridge, Ratio: f.FittedRidge})
		}
	}
	if ds := res.Diag.DampingSensitivity; ds != nil && ds.Computed && ds.WidthShare() > DampingShare {
		add(Reason{Code: DampingSensitive, Level: Fair, Figure: ds.WidthShare(), Bound: DampingShare})
	}
	if others > 0 {
		add(Reason{Code: Warned, Level: Fair, Count: others})
	}
	return v
}

// stepsNearBound finds the steps (with at least minStepValues values)
// whose coverage is below 1 - 2 alpha but within CoverageTolerance of it:
// below the bound, but not by more than sampling error (those beyond it
// are StepCoverage warnings).
func stepsNearBound(s *Summary) (Reason, bool) {
	floor := 1 - 2*s.Alpha
	r := Reason{Code: StepsNearBound, Level: Unmeasured, Bound: floor, Figure: math.Inf(1)}
	for t, c := range s.CoveragePerStep {
		n := 0
		if t < len(s.PointsPerStep) {
			n = s.PointsPerStep[t]
		}
		tol := interval.CoverageTolerance(floor, n)
		if n < minStepValues || !(c < floor) || c < floor-tol {
			continue
		}
		r.Steps = append(r.Steps, t)
		if c < r.Figure {
			r.Figure, r.Ratio = c, tol
		}
	}
	r.Count = len(r.Steps)
	return r, r.Count > 0
}

// coverageReason judges the pooled coverage against its target 1 - alpha
// and the jackknife+ bound 1 - 2 alpha, allowing CoverageTolerance of
// sampling error.
func coverageReason(s *Summary) Reason {
	nominal, floor := 1-s.Alpha, 1-2*s.Alpha
	tol := interval.CoverageTolerance(nominal, s.Points)
	if o := s.OverTime; o != nil && o.Long {
		// Serially dependent values: fewer effective ones (Newey-West).
		tol = math.Max(tol, o.Tolerance)
	}
	r := Reason{Figure: s.Coverage, Bound: nominal, Count: s.Points, Ratio: tol}
	switch {
	case s.Coverage > nominal+tol:
		r.Code, r.Level = CoverageAbove, Good
	case s.Coverage >= nominal-tol:
		r.Code, r.Level = CoverageAt, Good
	case s.Coverage >= floor-tol:
		r.Code, r.Level, r.Bound = CoverageBelowTarget, Fair, floor
	default:
		r.Code, r.Level, r.Bound = CoverageBelowBound, Poor, floor
	}
	return r
}

// unbounded counts the forecasts of seqs and those whose jackknife+
// interval is unbounded: a run without one bounded interval says nothing,
// labelled or not.
func unbounded(seqs []SequenceResult) (n, inf int) {
	for _, q := range seqs {
		for _, st := range q.Steps {
			if n++; math.IsInf(st.Upper-st.Lower, 0) {
				inf++
			}
		}
	}
	return n, inf
}
