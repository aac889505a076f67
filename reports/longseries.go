package reports

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/audit"
)

// tooFewResiduals says why intervals are unbounded for lack of
// leave-one-out residuals: the rule (audit.MinResiduals), the fewest
// residuals an unbounded interval had, and the remedies.
func tooFewResiduals(r *audit.Result) string {
	alpha := r.Setting.Alpha
	if s := r.Summary; s != nil && s.Alpha > 0 {
		alpha = s.Alpha
	}
	need := audit.MinResiduals(alpha)
	fewest := -1
	for _, q := range r.Sequences {
		for _, st := range q.Steps {
			if st.Target != nil && (!isFinite(st.Lower) || !isFinite(st.Upper)) && (fewest < 0 || st.M < fewest) {
				fewest = st.M
			}
		}
	}
	had := ""
	if fewest >= 0 && fewest < need {
		had = fmt.Sprintf("; the fewest here had %d", fewest)
	}
	remedy := "pool them across rows (--blocks interval --block-length K, which pools when the training sequences are few, or --pool rows)"
	if r.Setting.Pooling == string(audit.PoolRows) {
		remedy = fmt.Sprintf("start the test rows after the %d warm-up rows (--pool-warmup, or test rows that continue a training sequence)", r.Setting.Warmup)
	}
	return fmt.Sprintf("too few leave-one-out residuals for this alpha (a forecast needs at least %d at alpha %g, ⌈1/α⌉ − 1%s): %s, add training sequences, raise --alpha, or add a calibration set (--calibration).",
		need, alpha, had, remedy)
}
