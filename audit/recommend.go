package audit

import (
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

// hold reports whether kind k's coverage holds on the labelled test
// values (interval.StepRule.TestHolds with the audit's step rule), and
// when it does not, where it falls short.
func hold(k *interval.KindSummary, s *Summary, c *Conformal) (bool, Shortfall) {
	ok, t, joint, cov := calibrationRule.TestHolds(k, s.Alpha, s.Points, s.PointsPerStep, c.Forecasts)
	if ok {
		return true, Shortfall{}
	}
	return false, Shortfall{Step: t, Joint: joint, Coverage: cov}
}

// Eligible reports whether kind k may be recommended: not the Bonferroni
// kind (it answers another question, joint coverage), not the in-sample
// residual intervals (shown for comparison only: nothing guarantees
// their coverage on new data), and not a kind whose every interval is
// unbounded.
func Eligible(k *interval.KindSummary, s *Summary) bool {
	return k.Kind != interval.KindBonferroni && k.Kind != interval.KindInSample && k.Infinite < s.Points
}

// calibrationRule is the step rule by which a kind's coverage holds, on
// the test values (hold) and on the calibration values (Recommend).
var calibrationRule = interval.StepRule{Z: stepZ, Floor: stepFloor, MinValues: minStepValues}

// Recommend chooses the kind to recommend on the calibration values
// (interval.Choose over Conformal.Calibrated) and checks every kind on
// the labelled test values (hold); nil when there is nothing to choose
// from. Run and Predict store it in Conformal.Recommendation.
func Recommend(c *Conformal, s *Summary) *Recommendation { return recommend(c, s, calibrationRule) }

// recommend is Recommend with the step rule r of the calibration values.
func recommend(c *Conformal, s *Summary, rule interval.StepRule) *Recommendation {
	if c == nil || s == nil || len(c.Kinds)+len(c.Calibrated) == 0 {
		return nil
	}
	r := &Recommendation{Holds: make([]bool, len(c.Kinds)), Short: make([]Shortfall, len(c.Kinds)),
		CalHolds: make([]bool, len(c.Calibrated)), CalShort: make([]Shortfall, len(c.Calibrated))}
	for i := range c.Kinds {
		r.Holds[i], r.Short[i] = hold(&c.Kinds[i], s, c)
	}
	for i := range c.Calibrated {
		ok, t, cov := c.Calibrated[i].Holds(s.Alpha, rule)
		r.CalHolds[i] = ok
		if !ok {
			r.CalShort[i] = Shortfall{Step: t, Coverage: cov}
		}
	}
	if b := interval.Choose(c.Calibrated, s.Alpha, rule); b >= 0 {
		r.Kind = c.Calibrated[b].Kind
	}
	return r
}
