package adaptive

import (
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Coverage over time (docs/design.md, section 8.7): the values of one
// series are serially dependent, so coverage is judged with an effective
// sample size, shown along time as well as per row and per sequence, and
// checked for drift between the early and late test period.

// OverTime is the coverage of one kind of interval along time: the
// sampling tolerance that allows for serial dependence, rolling coverage
// pooled and per sequence, the drift between the first and last thirds
// of the test period, and the errors' lag-1 autocorrelation.
type OverTime struct {
	// Window is W: a rolling coverage is that of the last W forecasts of
	// a sequence, or pooled of the last W steps' forecasts of every
	// sequence; W is n/4 between 10 and 250 for sequences of at most n
	// labelled forecasts.
	Window int
	// Lag is the Newey-West lag L: the one given, else the usual
	// automatic lag of the sequences' median length n, floor(4
	// (n/100)^(2/9)), at least 1.
	Lag int
	// Inflation is the long-run variance of the coverage indicators
	// (Newey-West, within sequences, lag Lag) over their variance, at
	// least 1; EffectivePoints = labelled values / Inflation, and
	// Tolerance = DependentTolerance(1 - alpha, values, Inflation), the
	// verdict's sampling tolerance.
	Inflation       float64
	EffectivePoints float64
	Tolerance       float64
	// Pooled is the pooled rolling coverage by step (at most
	// maxRollingPoints, evenly spaced); Worst its lowest value over every
	// window.
	Pooled []RollingPoint
	Worst  float64
	// Sequences is the coverage of each evaluated sequence (when there
	// are at most MaxSequenceTable).
	Sequences []SequenceCoverage
	// Early and Late are the coverages of the first and last thirds of
	// the test steps, over EarlyPoints and LatePoints values;
	// DriftTolerance is the sampling tolerance of their difference
	// (dependence-aware). Early is NaN when there are fewer than six
	// steps.
	Early, Late             float64
	EarlyPoints, LatePoints int
	DriftTolerance          float64
	// Autocorrelation is the lag-1 autocorrelation of the errors y - f
	// within sequences, in time order, over AutocorrPairs pairs (NaN
	// without pairs); its bound is 2/sqrt(pairs).
	Autocorrelation float64
	AutocorrPairs   int
	// Long reports whether the evaluated sequences are long
	// (LongSeries): then the verdict uses Tolerance and the drift and
	// serial-correlation warnings are given.
	Long bool
}

// RollingPoint is one value of a rolling coverage: at step (time value)
// Step, the coverage of the window that ends there.
type RollingPoint struct {
	Step     float64
	Coverage float64
}

// SequenceCoverage is the coverage of one evaluated sequence.
type SequenceCoverage struct {
	ID       string
	Points   int
	Coverage float64
	// Worst is the lowest rolling coverage over windows of W forecasts
	// (NaN when the sequence has fewer); Rolling the rolling coverage
	// (at most maxRollingPoints, evenly spaced).
	Worst   float64
	Rolling []RollingPoint
	// Under reports coverage below 1 - alpha by more than its
	// dependence-aware tolerance (Tolerance).
	Under     bool
	Tolerance float64
	// Early and Late are the coverages of the sequence's first and last
	// thirds of forecasts (NaN with fewer than six), and Drift reports
	// that they differ by more than their dependence-aware sampling
	// tolerance: coverage that changes along the sequence, which names
	// where an under-covering sequence loses it.
	Early, Late float64
	Drift       bool
}

// Thresholds of the over-time analysis.
const (
	// LongSeries is the median number of labelled forecasts per evaluated
	// sequence from which the sequences count as long series: the drift
	// and serial-correlation checks then compare periods of time rather
	// than positions of short sequences.
	LongSeries = 50
	// MaxSequenceTable is the most sequences (or series) whose coverage
	// is given one by one.
	MaxSequenceTable = 50
	// maxRollingPoints is the most points of one rolling-coverage curve.
	maxRollingPoints = 200
)

// rollingWindow is W for sequences of at most n labelled forecasts:
// n/4, between 10 and 250.
func rollingWindow(n int) int { return min(250, max(10, n/4)) }

// neweyWestLag is the usual automatic lag for series of n values,
// floor(4 (n/100)^(2/9)), at least 1.
func neweyWestLag(n int) int {
	return max(1, int(math.Floor(4*math.Pow(float64(n)/100, 2.0/9))))
}

// DependentTolerance is the sampling tolerance of a coverage p measured
// on n values whose coverage indicators are serially dependent, their
// long-run variance inflation times their variance: two standard errors
// of the mean with n/inflation effective values, at least one
// percentage point. With inflation 1 it is the tolerance of n
// independent values.
func DependentTolerance(p float64, n int, inflation float64) float64 {
	return math.Max(0.01, 2*math.Sqrt(p*(1-p)*math.Max(1, inflation)/float64(max(1, n))))
}

// neweyWest returns the long-run variance inflation of the 0/1 series
// xs (one slice per sequence, in time order): (g0 + 2 sum_{k=1}^{L} (1 -
// k/(L+1)) g_k) / g0, with g_k the lag-k autocovariance about the pooled
// mean over pairs within a sequence, divided by the total count. It is
// at least 1, and 1 when g0 is 0.
func neweyWest(xs [][]float64, lag int) float64 {
	n, sum := 0, 0.0
	for _, x := range xs {
		for _, v := range x {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 1
	}
	mean := sum / float64(n)
	gamma := func(k int) float64 {
		s := 0.0
		for _, x := range xs {
			for i := k; i < len(x); i++ {
				s += (x[i] - mean) * (x[i-k] - mean)
			}
		}
		return s / float64(n)
	}
	g0 := gamma(0)
	if !(g0 > 0) {
		return 1
	}
	lrv := g0
	for k := 1; k <= lag; k++ {
		lrv += 2 * (1 - float64(k)/float64(lag+1)) * gamma(k)
	}
	return math.Max(1, lrv/g0)
}

// rolling returns the rolling mean of the last w values of c, with the
// step of each window's end, thinned to at most maxRollingPoints, and the
// lowest value over every window (NaN when len(c) < w).
func rolling(c, steps []float64, w int) ([]RollingPoint, float64) {
	ones := make([]float64, len(c))
	for i := range ones {
		ones[i] = 1
	}
	return rollingPooled(steps, c, ones, w)
}

// Value is one labelled forecast of a sequence, as the coverage over
// time takes it.
type Value struct {
	Seq  int     // index of its sequence
	Step float64 // time value of its target's row
	Hit  float64 // 1 when its interval covers the target, else 0
	Err  float64 // the target minus the prediction
}

// Over is the coverage over time of the labelled forecasts vals of the
// sequences named ids (vals[k].Seq indexes ids) at miscoverage alpha;
// lag is the Newey-West lag (0: the automatic lag of the sequences'
// median length). The values of a sequence are taken in step order, ties
// in the order of vals. Nil without values.
func Over(ids []string, vals []Value, alpha float64, lag int) *OverTime {
	if len(vals) == 0 {
		return nil
	}
	// byStep orders by step as sort.SliceStable with step < step would
	// (the same stable algorithm, without its reflection: 10,000 points
	// took it 5 ms at the paper's scale).
	byStep := func(a, b Value) int {
		switch {
		case a.Step < b.Step:
			return -1
		case b.Step < a.Step:
			return 1
		}
		return 0
	}
	// Each sequence's values are cut from one array made at its size.
	count := make([]int, len(ids))
	for _, v := range vals {
		count[v.Seq]++
	}
	bySeq := make([][]Value, len(ids))
	backing := make([]Value, 0, len(vals))
	for i, c := range count {
		bySeq[i], backing = backing[:0:c], backing[c:c]
	}
	for _, v := range vals {
		bySeq[v.Seq] = append(bySeq[v.Seq], v)
	}
	n := len(vals)
	var lens []int
	cov, errs := make([][]float64, 0, len(bySeq)), make([][]float64, 0, len(bySeq))
	longest := 0
	for _, vs := range bySeq {
		if len(vs) == 0 {
			continue
		}
		slices.SortStableFunc(vs, byStep)
		c, e := make([]float64, len(vs)), make([]float64, len(vs))
		for i, v := range vs {
			c[i], e[i] = v.Hit, v.Err
		}
		cov, errs = append(cov, c), append(errs, e)
		lens = append(lens, len(vs))
		longest = max(longest, len(vs))
	}
	slices.Sort(lens)
	median := lens[len(lens)/2]
	if lag <= 0 {
		lag = neweyWestLag(median)
	}
	o := &OverTime{Window: rollingWindow(longest), Lag: lag, Long: median >= LongSeries}
	o.Inflation = neweyWest(cov, lag)
	o.EffectivePoints = float64(n) / o.Inflation
	nominal := 1 - alpha
	o.Tolerance = DependentTolerance(nominal, n, o.Inflation)
	o.Autocorrelation, o.AutocorrPairs = num.Lag1(slices.Values(errs))

	// Pooled by step: every sequence's values at a step count together.
	all := make([]Value, 0, n)
	for _, vs := range bySeq {
		all = append(all, vs...)
	}
	slices.SortStableFunc(all, byStep)
	var steps []float64
	var hits, counts []float64
	for _, v := range all {
		if len(steps) == 0 || steps[len(steps)-1] != v.Step {
			steps = append(steps, v.Step)
			hits, counts = append(hits, 0), append(counts, 0)
		}
		hits[len(hits)-1] += v.Hit
		counts[len(counts)-1]++
	}
	o.Pooled, o.Worst = rollingPooled(steps, hits, counts, o.Window)
	o.Early, o.Late = math.NaN(), math.NaN()
	if k := len(steps) / 3; k >= 2 {
		var h1, n1, h2, n2 float64
		for i := range k {
			h1, n1 = h1+hits[i], n1+counts[i]
			j := len(steps) - 1 - i
			h2, n2 = h2+hits[j], n2+counts[j]
		}
		o.Early, o.Late = h1/n1, h2/n2
		o.EarlyPoints, o.LatePoints = int(n1), int(n2)
		o.DriftTolerance = math.Max(0.01, 2*math.Sqrt(nominal*(1-nominal)*o.Inflation*(1/n1+1/n2)))
	}
	if len(ids) <= MaxSequenceTable {
		for i, vs := range bySeq {
			if len(vs) == 0 {
				continue
			}
			c, st := make([]float64, len(vs)), make([]float64, len(vs))
			hit := 0.0
			for k, v := range vs {
				c[k], st[k] = v.Hit, v.Step
				hit += v.Hit
			}
			sc := SequenceCoverage{ID: ids[i], Points: len(vs), Coverage: hit / float64(len(vs))}
			sc.Rolling, sc.Worst = rolling(c, st, o.Window)
			infl := neweyWest([][]float64{c}, lag)
			sc.Tolerance = DependentTolerance(nominal, len(vs), infl)
			sc.Under = sc.Coverage < nominal-sc.Tolerance
			sc.Early, sc.Late, sc.Drift = thirds(c, nominal, infl)
			o.Sequences = append(o.Sequences, sc)
		}
	}
	return o
}

// thirds are the coverages of the first and last thirds of the 0/1
// coverage values c (in time order; NaN with fewer than six) and whether
// they differ by more than 2 sqrt(p(1-p) inflation (1/k + 1/k)), at least
// 0.01, the sampling tolerance of a difference of two means of k values
// each at coverage p with the long-run variance inflation inflation.
func thirds(c []float64, p, inflation float64) (early, late float64, drift bool) {
	k := len(c) / 3
	if k < 2 {
		return math.NaN(), math.NaN(), false
	}
	var h1, h2 float64
	for i := range k {
		h1 += c[i]
		h2 += c[len(c)-1-i]
	}
	early, late = h1/float64(k), h2/float64(k)
	tol := math.Max(0.01, 2*math.Sqrt(p*(1-p)*math.Max(1, inflation)*2/float64(k)))
	return early, late, math.Abs(late-early) > tol
}

// rollingPooled is the rolling coverage over the last w steps of the
// per-step hits and counts, thinned like rolling, and its lowest value
// (NaN with fewer than w steps).
func rollingPooled(steps, hits, counts []float64, w int) ([]RollingPoint, float64) {
	if len(steps) < w || w < 1 {
		return nil, math.NaN()
	}
	var out []RollingPoint
	ends := len(steps) - w + 1
	every := max(1, (ends+maxRollingPoints-1)/maxRollingPoints)
	worst := math.Inf(1)
	h, c := 0.0, 0.0
	for i := range steps {
		h, c = h+hits[i], c+counts[i]
		if i >= w {
			h, c = h-hits[i-w], c-counts[i-w]
		}
		if i >= w-1 {
			m := h / c
			worst = math.Min(worst, m)
			if (i-w+1)%every == 0 || i == len(steps)-1 {
				out = append(out, RollingPoint{Step: steps[i], Coverage: m})
			}
		}
	}
	return out, worst
}
