package interval

import (
	"math"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Choosing a kind of interval for future sequences from the calibration
// set (docs/design.md, section 10.4). The calibration values are held out
// from training, so every kind's interval at a calibration value is one
// a future sequence would get, and what they show needs no test label:
//
//   - jackknife+: its limits come from the training data alone, so the
//     share of calibration values inside them is an honest estimate of
//     its coverage on new sequences;
//   - split conformal and conformalized jackknife+: their limits are set
//     by the calibration values themselves, so their coverage there is
//     not a check but it needs none: if future sequences are
//     exchangeable with the calibration sequences it is at least 1 -
//     alpha per forecast (Guaranteed);
//   - the widths and the unbounded share of every kind at the calibration
//     values are what the kind costs.
//
// Choose takes the kinds that hold there, then the fewest unbounded
// intervals, then the narrowest; the test values, when labelled, are
// kept as the check of that choice.

// CalibrationFigures is one kind of interval as the calibration values
// see it: its coverage there, per row and pooled, and its width and
// unbounded count. Add fills it one calibration value at a time.
type CalibrationFigures struct {
	Kind string // the kind's name (a Kind constant)
	// Guaranteed says that the kind's limits were set from these same
	// calibration values (split conformal, conformalized jackknife+): its
	// coverage here holds by construction, and for exchangeable future
	// sequences by the conformal guarantee.
	Guaranteed bool
	Coverage   float64 // share of the values inside their interval
	Values     int     // calibration values
	// CoveragePerStep and ValuesPerStep are the same per row (0-based).
	CoveragePerStep []float64
	ValuesPerStep   []int
	MeanWidth       float64 // over the bounded intervals, NaN when none
	Unbounded       int     // values whose interval is unbounded

	covered []int
	width   float64
}

// Add counts the calibration value y at row with interval [lo, up]; an
// interval with a non-finite limit counts as unbounded (and covering).
func (f *CalibrationFigures) Add(row int, y, lo, up float64) {
	for len(f.ValuesPerStep) <= row {
		f.ValuesPerStep = append(f.ValuesPerStep, 0)
		f.covered = append(f.covered, 0)
	}
	f.Values++
	f.ValuesPerStep[row]++
	if lo <= y && y <= up || math.IsNaN(lo) || math.IsNaN(up) {
		f.covered[row]++
	}
	if math.IsInf(lo, 0) || math.IsInf(up, 0) || math.IsNaN(lo) || math.IsNaN(up) {
		f.Unbounded++
		return
	}
	f.width += up - lo
}

// Finish forms the shares and the mean width from the counts.
func (f *CalibrationFigures) Finish() {
	n := 0
	f.CoveragePerStep = make([]float64, len(f.ValuesPerStep))
	for t, m := range f.ValuesPerStep {
		n += f.covered[t]
		f.CoveragePerStep[t] = num.Ratio(float64(f.covered[t]), float64(m))
	}
	f.Coverage = num.Ratio(float64(n), float64(f.Values))
	f.MeanWidth = math.NaN()
	if b := f.Values - f.Unbounded; b > 0 {
		f.MeanWidth = f.width / float64(b)
	}
}

// StepRule is how far a row's coverage may fall below the target before
// a kind counts as failing there: Z standard errors sqrt(p (1 - p) / n),
// at least Floor, judged only at rows with at least MinValues values.
type StepRule struct {
	Z, Floor  float64
	MinValues int
	// Strict asks a kind without a guarantee to reach 1 - alpha on the
	// calibration values pooled, without the sampling tolerance (Holds):
	// for a calibration stretch of a series just before its test period,
	// whose values are dependent, so that a shortfall there persists
	// rather than averaging out (windowed audits).
	Strict bool
}

// Holds reports whether the kind's coverage on the calibration values
// reaches 1 - alpha: a guaranteed kind always does; another kind when its
// pooled coverage is within CoverageTolerance and every row within the
// step rule. When it does not, step is the row where it falls short (-1:
// pooled) and cov the coverage there. The tolerances treat the values as
// independent; values of one sequence are correlated, so a short
// calibration set judges jackknife+ leniently, and the test check (when
// the test data are labelled) is what catches that; a Strict rule allows
// no shortfall of the pooled coverage.
func (f *CalibrationFigures) Holds(alpha float64, r StepRule) (ok bool, step int, cov float64) {
	p := 1 - alpha
	if f.Guaranteed {
		return true, -1, f.Coverage
	}
	if f.Coverage < p-CoverageTolerance(p, f.Values) || r.Strict && f.Coverage < p {
		return false, -1, f.Coverage
	}
	for t, c := range f.CoveragePerStep {
		n := f.ValuesPerStep[t]
		if n < r.MinValues {
			continue
		}
		if c < p-math.Max(r.Floor, r.Z*math.Sqrt(p*(1-p)/float64(n))) {
			return false, t, c
		}
	}
	return true, -1, f.Coverage
}

// Choose returns the index in figs of the kind to use for future
// sequences, -1 when none qualifies: among the kinds that hold (Holds)
// and have a bounded interval at some calibration value, the one with the
// fewest unbounded intervals, then the smallest mean width; ties go to
// the earlier kind.
func Choose(figs []CalibrationFigures, alpha float64, r StepRule) int {
	best := -1
	for i := range figs {
		f := &figs[i]
		if ok, _, _ := f.Holds(alpha, r); !ok || f.Unbounded >= f.Values {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := &figs[best]
		if f.Unbounded < b.Unbounded || f.Unbounded == b.Unbounded && f.MeanWidth < b.MeanWidth {
			best = i
		}
	}
	return best
}

// TestHolds reports whether kind k's coverage measured on labelled test
// values reaches the target 1 - alpha: pooled within sampling error
// (CoverageTolerance over points values), and at every row with at least
// r.MinValues values (perStep) within r.Z standard errors, at least
// r.Floor. For the calibrated kinds a row's standard error also counts
// the calibration set's own sampling: their coverage given the
// calibration set varies around its mean with variance about p(1-p)/(m+1),
// m the fewest calibration values (pooled ones included) of a forecast at
// the row (forecasts). The Bonferroni kind is judged on joint coverage
// (joint). When the coverage does not hold, step is the row where it
// falls short (-1: pooled or joint) and cov the coverage there.
func (r StepRule) TestHolds(k *KindSummary, alpha float64, points int, perStep []int, forecasts []ConformalForecast) (ok bool, step int, joint bool, cov float64) {
	p := 1 - alpha
	if k.Kind == KindBonferroni {
		return k.JointCoverage >= p-CoverageTolerance(p, k.Sequences), -1, true, k.JointCoverage
	}
	if k.Coverage < p-CoverageTolerance(p, points) {
		return false, -1, false, k.Coverage
	}
	calibrated := k.Kind == KindSplit || k.Kind == KindConformalJackknife || k.Kind == KindNormalised
	for t, c := range k.CoveragePerStep {
		n := 0
		if t < len(perStep) {
			n = perStep[t]
		}
		if n < r.MinValues {
			continue
		}
		v := 1 / float64(n)
		if m := calibrationValues(forecasts, t); calibrated && m > 0 {
			v += 1 / float64(m+1)
		}
		if c < p-math.Max(r.Floor, r.Z*math.Sqrt(p*(1-p)*v)) {
			return false, t, false, c
		}
	}
	return true, -1, false, k.Coverage
}

// calibrationValues is the fewest calibration values of a forecast made
// at row t, pooled ones included (-1: none).
func calibrationValues(forecasts []ConformalForecast, t int) int {
	m := -1
	for _, f := range forecasts {
		if n := max(f.M, f.Pooled); f.Row == t && (m < 0 || n < m) {
			m = n
		}
	}
	return m
}
