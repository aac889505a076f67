package audit

import (
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// Coverage over time (issue 23, DESIGN section 9): values of one series
// are serially dependent, so coverage is judged with an effective sample
// size, shown along time as well as per row, per sequence, and checked
// for drift between the early and late test period.

// OverTime is the coverage of the jackknife+ intervals along time: the
// sampling tolerance that allows for serial dependence, rolling coverage
// pooled and per sequence, the drift between the first and last thirds
// of the test period, and the errors' lag-1 autocorrelation.
type OverTime struct {
	// Window is W: a rolling coverage is that of the last W forecasts of
	// a sequence, or pooled of the last W steps' forecasts of every
	// sequence (RollingWindow).
	Window int
	// Lag is the Newey-West lag L: the block length of interval and
	// nested blocks, else NeweyWestLag of the sequences' length.
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
	// MaxSequenceTable is the most evaluated sequences listed one by one.
	MaxSequenceTable = 50
	// maxRollingPoints is the most points of one rolling-coverage curve.
	maxRollingPoints = 200
)

// RollingWindow is W for sequences of at most n labelled forecasts:
// n/4, between 10 and 250.
func RollingWindow(n int) int { return min(250, max(10, n/4)) }

// NeweyWestLag is the usual automatic lag for series of n values,
// floor(4 (n/100)^(2/9)), at least 1.
func NeweyWestLag(n int) int {
	return max(1, int(math.Floor(4*math.Pow(float64(n)/100, 2.0/9))))
}

// DependentTolerance is CoverageTolerance for n values whose coverage
// indicators are serially dependent, their long-run variance inflation
// times their variance: two standard errors of the mean with n/inflation
// effective values, at least one percentage point.
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

// overTime computes the coverage over time of the labelled points pts of
// the evaluated set d with intervals l (lo, up), at level alpha; lag is
// the block length (0: sequence blocks, NeweyWestLag). Nil without
// labelled points.
func overTime(d *blocks.Dataset, pts []point, l limits, alpha float64, lag int) *OverTime {
	type val struct {
		step, cov, err float64
	}
	// byStep orders by step as sort.SliceStable with step < step would
	// (the same stable algorithm, without its reflection: 10,000 points
	// took it 5 ms at the paper's scale).
	byStep := func(a, b val) int {
		switch {
		case a.step < b.step:
			return -1
		case b.step < a.step:
			return 1
		}
		return 0
	}
	// Each sequence's values are cut from one array made at its size.
	count := make([]int, d.Len())
	for _, pt := range pts {
		if pt.has {
			count[pt.seq]++
		}
	}
	bySeq := make([][]val, d.Len())
	backing := make([]val, 0, len(pts))
	for i, c := range count {
		bySeq[i], backing = backing[:0:c], backing[c:c]
	}
	n := 0
	for p, pt := range pts {
		if !pt.has {
			continue
		}
		c := 0.0
		if l.lo[p] <= pt.y && pt.y <= l.up[p] {
			c = 1
		}
		s := d.Seqs[pt.seq]
		bySeq[pt.seq] = append(bySeq[pt.seq], val{step: s.Steps[min(pt.f.T+pt.f.H, s.Len()-1)], cov: c, err: pt.y - pt.pred})
		n++
	}
	if n == 0 {
		return nil
	}
	var lens []int
	cov, errs := make([][]float64, 0, len(bySeq)), make([][]float64, 0, len(bySeq))
	longest := 0
	for _, vs := range bySeq {
		if len(vs) == 0 {
			continue
		}
		// Points come by row, then horizon: stable by step.
		slices.SortStableFunc(vs, byStep)
		c, e := make([]float64, len(vs)), make([]float64, len(vs))
		for i, v := range vs {
			c[i], e[i] = v.cov, v.err
		}
		cov, errs = append(cov, c), append(errs, e)
		lens = append(lens, len(vs))
		longest = max(longest, len(vs))
	}
	slices.Sort(lens)
	median := lens[len(lens)/2]
	if lag <= 0 {
		lag = NeweyWestLag(median)
	}
	o := &OverTime{Window: RollingWindow(longest), Lag: lag, Long: median >= LongSeries}
	o.Inflation = neweyWest(cov, lag)
	o.EffectivePoints = float64(n) / o.Inflation
	nominal := 1 - alpha
	o.Tolerance = DependentTolerance(nominal, n, o.Inflation)
	o.Autocorrelation, o.AutocorrPairs = lag1(errs) // scheme.go's, as the scheme advice

	// Pooled by step: every sequence's values at a step count together.
	all := make([]val, 0, n)
	for _, vs := range bySeq {
		all = append(all, vs...)
	}
	slices.SortStableFunc(all, byStep)
	var steps []float64
	var hits, counts []float64
	for _, v := range all {
		if len(steps) == 0 || steps[len(steps)-1] != v.step {
			steps = append(steps, v.step)
			hits, counts = append(hits, 0), append(counts, 0)
		}
		hits[len(hits)-1] += v.cov
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
	if d.Len() <= MaxSequenceTable {
		for i, vs := range bySeq {
			if len(vs) == 0 {
				continue
			}
			c, st := make([]float64, len(vs)), make([]float64, len(vs))
			hit := 0.0
			for k, v := range vs {
				c[k], st[k] = v.cov, v.step
				hit += v.cov
			}
			sc := SequenceCoverage{ID: d.Seqs[i].ID, Points: len(vs), Coverage: hit / float64(len(vs))}
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

// timeWarnings are the warnings of coverage over time o at level alpha,
// for long series only (OverTime.Long): coverage that drifts between the
// early and late test period by more than DriftTolerance (CoverageDrift),
// and errors whose lag-1 autocorrelation exceeds 2/sqrt(pairs)
// (SerialCorrelation).
func timeWarnings(o *OverTime) []Warning {
	if o == nil || !o.Long {
		return nil
	}
	var out []Warning
	if !math.IsNaN(o.Early) && math.Abs(o.Late-o.Early) > o.DriftTolerance {
		out = append(out, Warning{Code: CoverageDrift, Step: -1, Figure: o.Late, Bound: o.Early, Ratio: o.DriftTolerance, Count: o.EarlyPoints + o.LatePoints})
	}
	if o.AutocorrPairs > 0 {
		if b := 2 / math.Sqrt(float64(o.AutocorrPairs)); math.Abs(o.Autocorrelation) > b {
			out = append(out, Warning{Code: SerialCorrelation, Step: -1, Figure: o.Autocorrelation, Bound: b, Count: o.AutocorrPairs})
		}
	}
	return out
}

// timeLag is the Newey-West lag of the over-time analysis: the block
// length of interval and nested blocks, else 0 (NeweyWestLag).
func (o *Options) timeLag() int {
	if o.Blocks != blocks.Sequences {
		return o.BlockLength
	}
	return 0
}
