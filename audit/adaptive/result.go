package adaptive

import "github.com/rnnaudit/rnnaudit/audit/interval"

// Result is what the intervals that adapt along time add to an audit's
// result: the options they ran with, the series they ran along, and the
// comparison of every kind's metrics on the labelled test values.
type Result struct {
	Base   string // BaseSplit or BaseJackknife
	Pooled bool   // one state over all sequences in time order
	// Source is where ACI and AgACI take their base scores:
	// "calibration" (the calibration set, per forecast), "window" (the
	// series' last Window labelled forecasts), "past" (every earlier
	// labelled forecast of the series) or, on the jackknife base,
	// "residuals" (each forecast's own leave-one-block-out sets).
	Source        string
	Window        int
	Gamma         float64
	Grid          []float64
	Rho           float64
	RollingWindow int
	LabelDelay    int // rows after the target's row at which labels arrive
	// Chains are the series the states run along (per sequence and
	// horizon, or per horizon when pooled); Longest the most labelled
	// forecasts of one.
	Chains  int
	Longest int
	// Kinds compares the adaptive kinds with the others on the labelled
	// test values (nil without them): ACI, AgACI, NexCP, Rolling, then
	// jackknife+, in-sample and, with a calibration set, split conformal
	// and conformalized jackknife+.
	Kinds []Kind
	// Notes say what limits the figures (short series, delays).
	Notes []string
	// Step, Integrator, Saturation, Clip and Decay are the finite kinds'
	// options (Options); Scorecast says whether conformal PID ran with
	// its scorecaster.
	Step, Integrator, Saturation, Clip, Decay float64
	Scorecast                                 bool
	// Penalty is the width at which the interval score (Kind.Winkler)
	// counts an unbounded interval (WidthPenalty).
	Penalty float64
	// Recommended is the adaptive kind recommended (Recommend), "" when
	// none is finite; RecommendedHolds says whether its coverage holds.
	Recommended      string
	RecommendedHolds bool
}

// Kind is one kind's metrics on the labelled test values, with its
// coverage over time and its guarantee.
type Kind struct {
	interval.KindSummary
	// WorstWindow is the lowest coverage of Result.RollingWindow
	// consecutive labelled forecasts of one series (NaN when no series has
	// that many); Windows counts the series that have.
	WorstWindow float64
	Windows     int
	// Empty counts the empty intervals (ACI at alpha_t >= 1, or on the
	// jackknife base where the limits at alpha_t cross), which the
	// metrics take as the point prediction and count as not covering.
	Empty int
	// Bound is the guaranteed bound on |long-run miscoverage - alpha|
	// where one holds (ACI with every forecast labelled before the next
	// is made: LongRunBound); NaN otherwise.
	Bound float64
	// Guarantee states the kind's guarantee as it holds.
	Guarantee string
	// Under are the series on which the kind under-covers (when there
	// are 2 to MaxSequenceTable series).
	Under []SeriesUnder
	// Unbounded is the share of unbounded intervals; MedianWidth and
	// P90Width the median and 90th percentile of the width over every
	// interval (an unbounded one infinitely wide); Winkler the interval
	// score over every interval, an unbounded one at Result.Penalty
	// (Widths).
	Unbounded, MedianWidth, P90Width, Winkler float64
}
