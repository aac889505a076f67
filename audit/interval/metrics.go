package interval

import (
	"math"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// The kinds of interval an audit compares (KindSummary.Kind): the names
// its results and reports give them.
const (
	KindJackknife          = "jackknife_plus"             // the influence jackknife+ (docs/design.md, section 5.4)
	KindConformalJackknife = "conformal_jackknife_plus"   // jackknife+ scaled on the calibration set
	KindSplit              = "split_conformal"            // prediction ± calibration quantile
	KindBonferroni         = "split_conformal_bonferroni" // the same at alpha / L, for joint coverage
	KindInSample           = "in_sample"                  // prediction ± quantile of training residuals
)

// KindSummary are the metrics of one kind of interval over labelled
// values (docs/design.md, section 8): what a report shows to compare
// kinds of interval on the same values. Per-step arrays are indexed by
// row.
type KindSummary struct {
	Kind            string // the kind's name
	Coverage        float64
	CoveragePerStep []float64
	JointCoverage   float64
	Sequences       int     // labelled sequences, for joint coverage
	MeanLength      float64 // over finite intervals
	LengthPerStep   []float64
	Infinite        int
	IntervalScore   float64 // Winkler score at alpha, over finite intervals
	Audit           Audit
}

// Audit are the risk-threshold flags of a set of intervals: an interval
// flags a value as possibly below Low when its lower limit is, and as
// possibly above High when its upper limit is (docs/design.md, section
// 8.5). The flags are what a user acts on, so their precision and recall
// say more than coverage.
type Audit struct {
	Low  *Threshold // nil without a low threshold
	High *Threshold // nil without a high threshold
}

// Threshold is how well the flags of one risk threshold find the values
// actually beyond it: a value is flagged when its interval reaches
// beyond the threshold (lower < low, or upper > high); precision is the
// fraction of flags that are real, recall the fraction of real cases
// flagged.
type Threshold struct {
	Threshold float64
	Precision float64 // NaN when nothing is flagged
	Recall    float64 // NaN when no real case
	Flagged   int
	True      int
	Actual    int // values actually beyond the threshold
}

// add counts one value: flagged by its interval, real when it is in fact
// beyond the threshold.
func (t *Threshold) add(flag, real bool) {
	if flag {
		t.Flagged++
		if real {
			t.True++
		}
	}
	if real {
		t.Actual++
	}
}

// finish sets the precision and recall from the counts.
func (t *Threshold) finish() {
	t.Precision = num.Ratio(float64(t.True), float64(t.Flagged))
	t.Recall = num.Ratio(float64(t.True), float64(t.Actual))
}

// Metrics accumulates the KindSummary of one kind of interval, one
// labelled value at a time, so that a caller holding its values in its
// own types need not copy them into slices for it. The sums are formed in
// the order of Add, which fixes every figure's rounding.
type Metrics struct {
	alpha     float64
	low, high *float64
	infinite  int

	cov, cnt, lens, lcnt []float64 // per row
	seqOK                map[int]bool
	covered, n           float64
	lenSum, lenN, score  float64
	tl, th               Threshold
}

// NewMetrics returns a Metrics for values of rows rows (0 to rows-1) at
// miscoverage alpha (the Winkler score's), with the risk thresholds low
// and high (nil: none).
func NewMetrics(alpha float64, low, high *float64, rows int) *Metrics {
	return &Metrics{alpha: alpha, low: low, high: high,
		cov: make([]float64, rows), cnt: make([]float64, rows), lens: make([]float64, rows), lcnt: make([]float64, rows),
		seqOK: map[int]bool{}}
}

// Add counts the labelled value y of sequence seq at row row, with
// interval [lo, up]; covered says whether the interval covers y, which the
// caller decides: lo <= y <= up, or for an interval symmetric about a
// prediction |y - prediction| <= half-width, which the float limits could
// misjudge on the boundary. Coverage counts every value, width and the
// Winkler score (width + 2/alpha times the miss) the finite intervals.
func (m *Metrics) Add(seq, row int, y, lo, up float64, covered bool) {
	if _, seen := m.seqOK[seq]; !seen {
		m.seqOK[seq] = true
	}
	m.n++
	m.cnt[row]++
	if covered {
		m.covered++
		m.cov[row]++
	} else {
		m.seqOK[seq] = false
	}
	if math.IsInf(lo, 0) || math.IsInf(up, 0) {
		m.infinite++
	} else {
		w := up - lo
		m.lenSum += w
		m.lenN++
		m.lens[row] += w
		m.lcnt[row]++
		if y < lo {
			w += 2 / m.alpha * (lo - y)
		}
		if y > up {
			w += 2 / m.alpha * (y - up)
		}
		m.score += w
	}
	if m.low != nil {
		m.tl.add(lo < *m.low, y < *m.low)
	}
	if m.high != nil {
		m.th.add(up > *m.high, y > *m.high)
	}
}

// Summary returns the metrics of the values added, named kind: coverage
// (overall, per row, joint per sequence), mean width of the finite
// intervals (overall, per row), the number of unbounded ones, the Winkler
// score and the threshold flags' precision and recall.
func (m *Metrics) Summary(kind string) KindSummary {
	rows := len(m.cnt)
	k := KindSummary{Kind: kind, CoveragePerStep: make([]float64, rows), LengthPerStep: make([]float64, rows), Infinite: m.infinite}
	k.Coverage = num.Ratio(m.covered, m.n)
	k.MeanLength = num.Ratio(m.lenSum, m.lenN)
	k.IntervalScore = num.Ratio(m.score, m.lenN)
	joint := 0
	for _, ok := range m.seqOK {
		if ok {
			joint++
		}
	}
	k.JointCoverage = num.Ratio(float64(joint), float64(len(m.seqOK)))
	k.Sequences = len(m.seqOK)
	for t := range rows {
		k.CoveragePerStep[t] = num.Ratio(m.cov[t], m.cnt[t])
		k.LengthPerStep[t] = num.Ratio(m.lens[t], m.lcnt[t])
	}
	if m.low != nil {
		tl := m.tl
		tl.Threshold = *m.low
		tl.finish()
		k.Audit.Low = &tl
	}
	if m.high != nil {
		th := m.th
		th.Threshold = *m.high
		th.finish()
		k.Audit.High = &th
	}
	return k
}
