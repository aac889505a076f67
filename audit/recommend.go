package audit

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// Recommendation is the kind of interval an audit with a calibration set
// recommends, and why: the narrowest kind whose measured coverage holds
// on the test data (Holds). Package reports puts it into words.
type Recommendation struct {
	// Kind is the recommended kind (a Kind constant), "" when none holds
	// or there is nothing to compare.
	Kind string
	// Holds[i] says whether Conformal.Kinds[i]'s coverage holds (hold);
	// Short[i], when it does not, says where it falls short.
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
// at row t (-1: none).
func calibrationValues(c *Conformal, t int) int {
	m := -1
	for _, f := range c.Forecasts {
		if f.Row == t && (m < 0 || f.M < m) {
			m = f.M
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

// narrower orders kinds by width: fewer unbounded intervals first, then
// the smaller mean width.
func narrower(a, b *interval.KindSummary) bool {
	if a.Infinite != b.Infinite {
		return a.Infinite < b.Infinite
	}
	return a.MeanLength < b.MeanLength
}

// Recommend picks the narrowest eligible kind whose coverage holds; nil
// when there is nothing to compare. Run and Predict store it in
// Conformal.Recommendation.
func Recommend(c *Conformal, s *Summary) *Recommendation {
	if c == nil || s == nil || len(c.Kinds) == 0 {
		return nil
	}
	r := &Recommendation{Holds: make([]bool, len(c.Kinds)), Short: make([]Shortfall, len(c.Kinds))}
	var best *interval.KindSummary
	for i := range c.Kinds {
		k := &c.Kinds[i]
		r.Holds[i], r.Short[i] = hold(k, s, c)
		if Eligible(k, s) && r.Holds[i] && (best == nil || narrower(k, best)) {
			best = k
		}
	}
	if best != nil {
		r.Kind = best.Kind
	}
	return r
}
