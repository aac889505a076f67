package classify

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// SplitSet returns the labels 0..K-1 whose score under the class
// probabilities p is at most q, the conformal quantile of the
// calibration scores (interval.UpperQuantile at alpha): split
// conformal's set, which holds the true label with probability at least
// 1 - alpha when calibration and test forecasts are exchangeable.
func SplitSet(s Score, p []float64, q float64) []int {
	set := []int{}
	for y := range p {
		if s.Of(p, y) <= q {
			set = append(set, y)
		}
	}
	return set
}

// BinaryProbs returns the class probabilities (1-p, p) of a binary
// forecast whose probability of class 1 is p.
func BinaryProbs(p float64) []float64 { return []float64{1 - p, p} }

// JackknifeSet returns the jackknife+ set of a binary forecast (Romano,
// Sesia and Candès 2020, section 4, with leave-one-block-out models):
// label y is in the set when
//
//	#{i : S(|y - pred[b_i]|, u) > S(r_i, u_i)} < (1 - alpha)(n + 1),
//
// over the leave-one-block-out residuals r_i = |y_i - p_{-b_i}(x_i)| of
// the training forecasts (res, each with its block b_i; skip drops those
// a self-audit leaves out), S the score's function of a binary label's
// LAC score (Score.Binary; u the forecast's uniform, u_i each residual's,
// Uniform of its sequence, block and value) and pred[b] the forecast's
// probability of class 1 under block b's model (NaN: a block not
// estimated, whose residuals are left out). n counts the residuals used.
// With alpha in (0, 1) the set covers the true label with probability
// at least 1 - 2 alpha, and about 1 - alpha in practice, as jackknife+
// intervals do.
func JackknifeSet(s Score, alpha float64, pred []float64, res []interval.Residual, skip interval.Skip, u float64) []int {
	var n int
	var count [2]int
	for _, e := range res {
		if skip.Drops(e) || e.Blk < 0 || e.Blk >= len(pred) || math.IsNaN(pred[e.Blk]) {
			continue
		}
		n++
		si := s.Binary(e.R, Uniform(uint64(e.Seq), uint64(e.Blk), math.Float64bits(e.R)))
		for y := range count {
			if s.Binary(math.Abs(float64(y)-pred[e.Blk]), u) > si {
				count[y]++
			}
		}
	}
	set := []int{}
	for y, c := range count {
		if n == 0 || float64(c) < (1-alpha)*float64(n+1) {
			set = append(set, y)
		}
	}
	return set
}

// ProbInterval returns the jackknife interval at level 1 - alpha of a
// predicted probability pHat from the probabilities loo[b] of the n
// leave-one-block-out models (NaN entries are left out): on the logit
// scale, logit(pHat) ± z_{1-alpha/2} times the jackknife standard error
//
//	se = sqrt((n-1)/n sum_b (l_b - mean l)^2),  l_b = logit(loo[b]),
//
// mapped back through the sigmoid, so that the limits stay in (0, 1).
// It is the sampling uncertainty of the trained model's probability:
// how far the risk score would move with other training data
// (epistemic), not the label's (aleatoric) uncertainty, which the sets
// carry. The factor n - 1 is the jackknife's: leaving one block out of n
// moves the model about 1/(n-1) of the way a new sample of the data
// would. Fewer than two models give (NaN, NaN).
func ProbInterval(alpha, pHat float64, loo []float64) (lo, up float64) {
	var sum, sumsq float64
	n := 0
	for _, p := range loo {
		if math.IsNaN(p) {
			continue
		}
		l := logit(p)
		sum += l
		sumsq += l * l
		n++
	}
	if n < 2 {
		return math.NaN(), math.NaN()
	}
	mean := sum / float64(n)
	ss := math.Max(sumsq-float64(n)*mean*mean, 0)
	se := math.Sqrt(float64(n-1) / float64(n) * ss)
	z := math.Sqrt2 * math.Erfinv(1-alpha)
	c := logit(pHat)
	return sigmoid(c - z*se), sigmoid(c + z*se)
}

// logit is log(p/(1-p)), with p kept in [1e-12, 1 - 1e-12].
func logit(p float64) float64 {
	p = math.Min(math.Max(p, 1e-12), 1-1e-12)
	return math.Log(p / (1 - p))
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
