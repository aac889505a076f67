package classify

import (
	"math"
	"slices"
)

// Forecast is one classification forecast as the figures read it.
type Forecast struct {
	// Probs are the predicted class probabilities (K of them; a binary
	// forecast's are (1-p, p)).
	Probs []float64
	// ProbLower and ProbUpper are the limits of the probability of class
	// 1 (ProbInterval; NaN when not estimated, and for a K-class forecast).
	ProbLower, ProbUpper float64
	// Lowers and Uppers are a K-class forecast's (Multi.Point) limits of
	// each class's probability; nil for a binary one.
	Lowers, Uppers []float64
	// Set is the jackknife+ prediction set; Split the split-conformal
	// one (nil without a calibration set).
	Set, Split []int
	// Label is the true class, or -1 when the forecast has no label.
	Label int
	// Row is the forecast's row in its sequence (0-based), by which
	// SetFigures.ByStep groups the forecasts.
	Row int
	// score and u are a K-class forecast's set score and the uniform of
	// its randomised scores (SplitFrom).
	score Score
	u     float64
}

// SetFigures judge a kind of prediction sets on the labelled forecasts.
type SetFigures struct {
	// Coverage is the share of sets holding the true label.
	Coverage float64
	// MeanSize is the mean number of labels per set; Singleton and Empty
	// the shares of sets of one and of no label.
	MeanSize, Singleton, Empty float64
	// BySize is the coverage of the sets of each size 0..K (a set method
	// that covers by returning every label is seen here), ByClass the
	// coverage and the mean size by true class (one that covers by
	// always holding the majority class is seen here).
	BySize  []Cell
	ByClass []Cell
	// ByStep is the coverage and mean size by row of the sequence
	// (ByStep).
	ByStep []Cell
}

// Cell is a figure of a subset of forecasts: their number, their
// coverage and the mean size of their sets.
type Cell struct {
	Key      int
	N        int
	Coverage float64
	MeanSize float64
}

// Bin is one bin of a reliability diagram: forecasts whose probability
// of class 1 (binary) or whose top probability (K classes) is in [Lo,
// Hi), their mean probability and the observed frequency of the event.
type Bin struct {
	Lo, Hi    float64
	N         int
	MeanProb  float64
	Frequency float64
}

// Flag is the audit of a risk flag on a probability's limit: a forecast
// is flagged when the lower limit of its probability of class 1 is above
// Threshold (Above) or its upper limit below it; Precision is the share
// of flagged forecasts whose label agrees (1 above, 0 below) and Recall
// the share of such labels that are flagged.
type Flag struct {
	Threshold float64
	Above     bool
	Flagged   int
	Precision float64
	Recall    float64
}

// Summary is every figure of a set of classification forecasts.
type Summary struct {
	Alpha float64
	Score Score
	// Classes is K; Labelled the forecasts with a label.
	Classes  int
	Labelled int
	// Jackknife judges the jackknife+ sets, Split the split-conformal
	// ones (nil without a calibration set).
	Jackknife SetFigures
	Split     *SetFigures
	// Brier is the mean squared error of class 1's probability against
	// the label for a binary forecast, and for K classes the mean squared
	// distance between the class probabilities and the one-hot label,
	// summed over classes; LogLoss the mean -log p_label; ECE
	// the expected calibration error over Reliability's bins; AUROC the
	// area under the ROC curve of class 1's probability (binary only,
	// NaN otherwise or with a single class present).
	Brier, LogLoss, ECE, AUROC float64
	Reliability                []Bin
	// ProbWidth is the mean width of the probability intervals (of every
	// class's probability for K classes).
	ProbWidth float64
	// FlagAbove and FlagBelow audit the risk flags asked for (nil when
	// not asked).
	FlagAbove, FlagBelow *Flag
	// Recommended is the kind of sets recommended (nil without
	// split-conformal sets; its Kind is set by Recommend).
	Recommended *SetRecommendation
}

// eceBins is the number of equal-width bins of the reliability diagram.
const eceBins = 10

// Summarize computes the figures of the forecasts fs at level 1 - alpha
// (score s named in the summary); above and below, when non-nil, are
// the thresholds of the risk flags. Figures over no labelled forecast
// are NaN.
func Summarize(fs []Forecast, alpha float64, s Score, above, below *float64) *Summary {
	sum := &Summary{Alpha: alpha, Score: s}
	var lab []Forecast
	for _, f := range fs {
		sum.Classes = max(sum.Classes, len(f.Probs))
		if f.Label >= 0 && f.Label < len(f.Probs) {
			lab = append(lab, f)
		}
	}
	sum.Labelled = len(lab)
	jk, split := func(f Forecast) []int { return f.Set }, func(f Forecast) []int { return f.Split }
	sum.Jackknife = setFigures(lab, sum.Classes, jk)
	sum.Jackknife.ByStep = ByStep(lab, jk)
	if len(lab) > 0 && lab[0].Split != nil {
		sp := setFigures(lab, sum.Classes, split)
		sp.ByStep = ByStep(lab, split)
		sum.Split = &sp
		r := &SetRecommendation{CalCoverage: math.NaN()}
		r.JackknifeSize, r.SplitSize = meanSizes(fs)
		sum.Recommended = r
	}
	sum.Brier, sum.LogLoss = scores(lab)
	sum.Reliability, sum.ECE = reliability(lab)
	sum.AUROC = math.NaN()
	if sum.Classes == 2 {
		sum.AUROC = auroc(lab)
	}
	var w, nw float64
	for _, f := range fs {
		if d := f.ProbUpper - f.ProbLower; !math.IsNaN(d) {
			w += d
			nw++
		}
		for k := range f.Lowers {
			if d := f.Uppers[k] - f.Lowers[k]; !math.IsNaN(d) {
				w += d
				nw++
			}
		}
	}
	sum.ProbWidth = ratio(w, nw)
	if above != nil {
		sum.FlagAbove = flag(lab, *above, true)
	}
	if below != nil {
		sum.FlagBelow = flag(lab, *below, false)
	}
	return sum
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// setFigures judges the sets set(f) of the labelled forecasts lab.
func setFigures(lab []Forecast, K int, set func(Forecast) []int) SetFigures {
	var sf SetFigures
	size := make([]Cell, K+1)
	class := make([]Cell, K)
	var cov, sz, one, empty float64
	for _, f := range lab {
		s := set(f)
		c := 0.0
		if slices.Contains(s, f.Label) {
			c = 1
		}
		n := min(len(s), K)
		cov += c
		sz += float64(len(s))
		if n == 1 {
			one++
		} else if n == 0 {
			empty++
		}
		for _, cell := range []*Cell{&size[n], &class[f.Label]} {
			cell.N++
			cell.Coverage += c
			cell.MeanSize += float64(len(s))
		}
	}
	m := float64(len(lab))
	sf.Coverage, sf.MeanSize, sf.Singleton, sf.Empty = ratio(cov, m), ratio(sz, m), ratio(one, m), ratio(empty, m)
	for _, cells := range [][]Cell{size, class} {
		for k := range cells {
			c := &cells[k]
			c.Key = k
			c.Coverage, c.MeanSize = ratio(c.Coverage, float64(c.N)), ratio(c.MeanSize, float64(c.N))
		}
	}
	sf.BySize, sf.ByClass = size, class
	return sf
}

// scores returns the Brier score (binary: of class 1's probability;
// else summed over classes) and the log loss of the labelled forecasts.
func scores(lab []Forecast) (brier, logLoss float64) {
	for _, f := range lab {
		if len(f.Probs) == 2 {
			y := float64(f.Label)
			brier += (f.Probs[1] - y) * (f.Probs[1] - y)
		} else {
			for k, p := range f.Probs {
				y := 0.0
				if k == f.Label {
					y = 1
				}
				brier += (p - y) * (p - y)
			}
		}
		logLoss -= math.Log(math.Max(f.Probs[f.Label], 1e-15))
	}
	m := float64(len(lab))
	return ratio(brier, m), ratio(logLoss, m)
}

// reliability bins the labelled forecasts by their probability of class
// 1 (binary) or top probability (K classes) into eceBins equal bins and
// returns them with the expected calibration error, sum_bins (n_bin/n)
// |mean probability - frequency|.
func reliability(lab []Forecast) ([]Bin, float64) {
	bins := make([]Bin, eceBins)
	for i := range bins {
		bins[i].Lo, bins[i].Hi = float64(i)/eceBins, float64(i+1)/eceBins
	}
	for _, f := range lab {
		p, hit := top(f)
		i := min(eceBins-1, max(0, int(p*eceBins)))
		bins[i].N++
		bins[i].MeanProb += p
		bins[i].Frequency += hit
	}
	ece := 0.0
	for i := range bins {
		b := &bins[i]
		b.MeanProb, b.Frequency = ratio(b.MeanProb, float64(b.N)), ratio(b.Frequency, float64(b.N))
		if b.N > 0 {
			ece += float64(b.N) / float64(len(lab)) * math.Abs(b.MeanProb-b.Frequency)
		}
	}
	if len(lab) == 0 {
		ece = math.NaN()
	}
	return bins, ece
}

// top returns the probability a reliability diagram bins a forecast by
// and whether its event happened: class 1's for a binary forecast, else
// the top class's.
func top(f Forecast) (p, hit float64) {
	if len(f.Probs) == 2 {
		return f.Probs[1], float64(f.Label)
	}
	k := 0
	for j, q := range f.Probs {
		if q > f.Probs[k] {
			k = j
		}
	}
	if k == f.Label {
		hit = 1
	}
	return f.Probs[k], hit
}

// auroc is the area under the ROC curve of class 1's probability: the
// probability that a forecast labelled 1 has a higher probability than
// one labelled 0, ties counting one half (the Mann-Whitney statistic).
func auroc(lab []Forecast) float64 {
	type sv struct{ p, y float64 }
	v := make([]sv, len(lab))
	var n1 float64
	for i, f := range lab {
		v[i] = sv{f.Probs[1], float64(f.Label)}
		n1 += v[i].y
	}
	n0 := float64(len(v)) - n1
	if n1 == 0 || n0 == 0 {
		return math.NaN()
	}
	slices.SortFunc(v, func(a, b sv) int {
		switch {
		case a.p < b.p:
			return -1
		case a.p > b.p:
			return 1
		}
		return 0
	})
	// Sum of the ranks of the ones, tied ranks averaged.
	rankSum := 0.0
	for i := 0; i < len(v); {
		j := i
		for j < len(v) && v[j].p == v[i].p {
			j++
		}
		mid := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			rankSum += mid * v[k].y
		}
		i = j
	}
	return (rankSum - n1*(n1+1)/2) / (n1 * n0)
}

// flag audits the risk flag at threshold t: above flags forecasts whose
// probability's lower limit exceeds t, else those whose upper limit is
// below t.
func flag(lab []Forecast, t float64, above bool) *Flag {
	fl := &Flag{Threshold: t, Above: above}
	want := 0
	if above {
		want = 1
	}
	var tp, pos float64
	for _, f := range lab {
		hit := f.Label == want
		on := (above && f.ProbLower > t) || (!above && f.ProbUpper < t)
		if hit {
			pos++
		}
		if on {
			fl.Flagged++
			if hit {
				tp++
			}
		}
	}
	fl.Precision, fl.Recall = ratio(tp, float64(fl.Flagged)), ratio(tp, pos)
	return fl
}
