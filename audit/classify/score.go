package classify

import (
	"fmt"
	"math"
	"strings"
)

// Score is a nonconformity score of a label y given a forecast's class
// probabilities p: the larger, the less the label conforms.
type Score string

const (
	// LAC (least ambiguous set-valued classifier, Sadinle et al. 2019) is
	// 1 - p_y: the smallest sets on average.
	LAC Score = "lac"
	// APS (adaptive prediction sets, Romano et al. 2020) is the
	// probability mass of the classes ranked above y plus p_y (the
	// non-randomised form): sets that grow with the forecast's doubt.
	APS Score = "aps"
	// RAPS (regularised APS, Angelopoulos et al. 2021) is APS plus
	// RAPSLambda times the number of classes ranked above y beyond
	// RAPSKReg - 1: APS with fewer unlikely classes.
	RAPS Score = "raps"
)

// RAPSLambda and RAPSKReg are RAPS's penalty and the rank from which it
// applies (the values of Angelopoulos et al.'s ImageNet experiments,
// lambda = 0.01, k_reg = 1 for few classes).
const (
	RAPSLambda = 0.01
	RAPSKReg   = 1
)

// ParseScore reads a score's name (lac, aps, raps; "" is LAC).
func ParseScore(s string) (Score, error) {
	switch Score(strings.ToLower(s)) {
	case "", LAC:
		return LAC, nil
	case APS:
		return APS, nil
	case RAPS:
		return RAPS, nil
	}
	return "", fmt.Errorf("set score %q: choose lac, aps or raps", s)
}

// Of returns the score of label y given the class probabilities p.
// Classes of equal probability rank by index.
func (s Score) Of(p []float64, y int) float64 {
	if s != APS && s != RAPS {
		return 1 - p[y]
	}
	cum, above := p[y], 0
	for j, q := range p {
		if q > p[y] || (q == p[y] && j < y) {
			cum += q
			above++
		}
	}
	if s == RAPS {
		cum += RAPSLambda * float64(max(0, above+1-RAPSKReg))
	}
	return cum
}

// Randomized returns the randomised score of label y (Romano et al.
// 2020): APS and RAPS count u p_y instead of p_y (u uniform in [0, 1),
// drawn once per forecast), which makes their sets exact instead of
// conservative; LAC is not randomised. Without it a two-class APS set
// holds both labels whenever fewer than 1 - alpha of the forecasts rank
// their true label first: the second label's score is 1, the largest.
func (s Score) Randomized(p []float64, y int, u float64) float64 {
	v := s.Of(p, y)
	if s == APS || s == RAPS {
		v -= (1 - u) * p[y]
	}
	return v
}

// Binary returns the randomised score (Randomized, with u) of a label
// of a two-class forecast whose LAC score (1 - its probability, the
// absolute residual |y - p| of a probability output) is r: every score
// of a binary label is a function of r and u, so the leave-one-block-out
// residuals of a probability output give every score's jackknife+ sets.
// r outside [0, 1] (an unbounded residual) is clamped.
func (s Score) Binary(r, u float64) float64 {
	if math.IsNaN(r) {
		return math.Inf(1)
	}
	r = math.Min(math.Max(r, 0), 1)
	return s.Randomized([]float64{r, 1 - r}, 1, u)
}

// Uniform returns a number in [0, 1) determined by the given keys
// (SplitMix64 of their combination): the u of a randomised score, the
// same on every run, so that reports are reproducible.
func Uniform(keys ...uint64) float64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, k := range keys {
		h ^= k
		h += 0x9e3779b97f4a7c15
		z := h
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		h = z ^ (z >> 31)
	}
	return float64(h>>11) / (1 << 53)
}
