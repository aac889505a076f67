package audit

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// Recommendation is the kind of interval an audit with a calibration set
// recommends for future sequences, and why. The kind is chosen from what
// the fit knows, the calibration values (interval.Choose: the kinds whose
// coverage holds there, then the fewest unbounded intervals, then the
// narrowest); the labelled test values, when there are any, check that
// choice (Holds). Package reports puts it into words.
type Recommendation struct {
	// Kind is the recommended kind (a Kind constant), "" when no kind
	// holds on the calibration values with a bounded interval.
	Kind string
	// CalHolds[i] says whether Conformal.Calibrated[i]'s coverage holds
	// on the calibration values; CalShort[i], when it does not, where it
	// falls short.
	CalHolds []bool
	CalShort []Shortfall
	// Holds[i] says whether Conformal.Kinds[i]'s coverage holds on the
	// labelled test values (hold); Short[i], when it does not, says where
	// it falls short. Both are empty without labelled test values.
	Holds []bool
	Short []Shortfall
}

// Shortfall is where a kind's coverage falls short of the target: Step
// is the row (0-based), or -1 for the pooled (or, Joint, the joint)
// coverage; Coverage is the figure there.
type Shortfall struct {
	Step     int
	Joint    bool
	Coverage float64
}

// hold reports whether kind k's measured coverage reaches the target
// 1-alpha: pooled within sampling error (interval.CoverageTolerance), and at every
// step with at least minStepValues values within stepZ standard errors
// (and at least stepFloor). For the calibrated kinds a step's standard
// error also counts the calibration set's own sampling: their coverage
// given the calibration set varies around its mean with variance about
// p(1-p)/(m+1), m the calibration values at the step. The Bonferroni
// kind is judged on joint coverage. When the coverage does not hold it
// says where.
func hold(k *interval.KindSummary, s *Summary, c *Conformal) (bool, Shortfall) {
	p := 1 - s.Alpha
	if k.Kind == interval.KindBonferroni {
		if k.JointCoverage < p-interval.CoverageTolerance(p, k.Sequences) {
			return false, Shortfall{Step: -1, Joint: true, Coverage: k.JointCoverage}
		}
		return true, Shortfall{}
	}
	if k.Coverage < p-interval.CoverageTolerance(p, s.Points) {
		return false, Shortfall{Step: -1, Coverage: k.Coverage}
	}
	calibrated := k.Kind == interval.KindSplit || k.Kind == interval.KindConformalJackknife
	for t, cov := range k.CoveragePerStep {
		n := 0
		if t < len(s.PointsPerStep) {
			n = s.PointsPerStep[t]
		}
		if n < minStepValues {
			continue
		}
		v := 1 / float64(n)
		if calibrated {
			if m := calibrationValues(c, t); m > 0 {
				v += 1 / float64(m+1)
			}
		}
		if cov < p-math.Max(stepFloor, stepZ*math.Sqrt(p*(1-p)*v)) {
			return false, Shortfall{Step: t, Coverage: cov}
		}
	}
	return true, Shortfall{}
}

// calibrationValues is the fewest calibration values of a forecast made
// at row t, pooled ones included (-1: none).
func calibrationValues(c *Conformal, t int) int {
	m := -1
	for _, f := range c.Forecasts {
		if n := max(f.M, f.Pooled); f.Row == t && (m < 0 || n < m) {
			m = n
		}
	}
	return m
}

// Eligible reports whether kind k may be recommended: not the Bonferroni
// kind (it answers another question, joint coverage), not the in-sample
// residual intervals (shown for comparison only: nothing guarantees
// their coverage on new data), and not a kind whose every interval is
// unbounded.
func Eligible(k *interval.KindSummary, s *Summary) bool {
	return k.Kind != interval.KindBonferroni && k.Kind != interval.KindInSample && k.Infinite < s.Points
}

// calibrationRule is the step rule of hold, applied to the calibration
// values.
var calibrationRule = interval.StepRule{Z: stepZ, Floor: stepFloor, MinValues: minStepValues}

// Recommend chooses the kind to recommend on the calibration values
// (interval.Choose over Conformal.Calibrated) and checks every kind on
// the labelled test values (hold); nil when there is nothing to choose
// from. Run and Predict store it in Conformal.Recommendation.
func Recommend(c *Conformal, s *Summary) *Recommendation {
	if c == nil || s == nil || len(c.Kinds)+len(c.Calibrated) == 0 {
		return nil
	}
	r := &Recommendation{Holds: make([]bool, len(c.Kinds)), Short: make([]Shortfall, len(c.Kinds)),
		CalHolds: make([]bool, len(c.Calibrated)), CalShort: make([]Shortfall, len(c.Calibrated))}
	for i := range c.Kinds {
		r.Holds[i], r.Short[i] = hold(&c.Kinds[i], s, c)
	}
	for i := range c.Calibrated {
		ok, t, cov := c.Calibrated[i].Holds(s.Alpha, calibrationRule)
		r.CalHolds[i] = ok
		if !ok {
			r.CalShort[i] = Shortfall{Step: t, Coverage: cov}
		}
	}
	if b := interval.Choose(c.Calibrated, s.Alpha, calibrationRule); b >= 0 {
		r.Kind = c.Calibrated[b].Kind
	}
	return r
}
