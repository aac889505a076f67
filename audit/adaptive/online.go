package adaptive

import (
	"math"
	"slices"
	"sort"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// The online pieces of the intervals that adapt along time (run.go runs
// them along each series): the ACI update of the working level,
// conformal quantiles at any level, NexCP's weighted quantile, and
// Bernstein online aggregation for AgACI. Each is a plain
// function or a small value, tested against hand-worked examples.

// aciUpdate is one step of adaptive conformal inference (Gibbs and
// Candès 2021, eq. 2): alpha_{t+1} = alpha_t + gamma (alpha - err_t), with
// err_t 1 when the target fell outside the interval made at level
// 1 - alpha_t and 0 when inside. It is not clipped: alpha_t <= 0 gives an
// unbounded interval and alpha_t >= 1 an empty one (quantileAt), which is
// what the long-run guarantee needs.
func aciUpdate(alpha, alphaT, gamma float64, miss bool) float64 {
	err := 0.0
	if miss {
		err = 1
	}
	return alphaT + gamma*(alpha-err)
}

// quantileAt is the conformal quantile of the scores sorted (ascending)
// at a working level a: the ceil((1-a)(m+1))-th smallest of the m scores
// (interval.UpperRank), +Inf when a <= 0 or that rank exceeds m (the
// interval is the whole line), and -Inf when a >= 1 (the interval is
// empty: Gibbs and Candès set C_t to the empty set there).
func quantileAt(a float64, sorted []float64) float64 {
	switch {
	case a >= 1:
		return math.Inf(-1)
	case !(a > 0):
		return math.Inf(1)
	}
	k := interval.UpperRank(a, len(sorted))
	if k > len(sorted) {
		return math.Inf(1)
	}
	return sorted[max(k, 1)-1]
}

// nexcpNegligible is the relative weight below which NexCP drops a score:
// with rho^k below it, the scores older than k carry at most
// nexcpNegligible/(1-rho) of the total weight.
const nexcpNegligible = 1e-12

// nexcpQuantile is the weighted conformal quantile of nonexchangeable
// conformal prediction (Barber, Candès, Ramdas and Tibshirani 2023,
// eq. 10) with fixed geometric weights: the past scores s_1..s_n (oldest
// first) get weights w_i = rho^(n+1-i), the test point weight 1 on +Inf,
// and the quantile is the smallest score s with
//
//	sum_{i: s_i <= s} w_i >= (1 - alpha)(1 + sum_i w_i),
//
// +Inf when no score reaches it. With rho = 1 it is the split-conformal
// quantile, the ceil((1-alpha)(n+1))-th smallest. Scores whose weight is
// below nexcpNegligible are dropped. buf is scratch space, returned for
// reuse.
func nexcpQuantile(alpha, rho float64, scores []float64, buf []wscore) (float64, []wscore) {
	n := len(scores)
	keep := n
	if rho < 1 {
		keep = min(n, int(math.Ceil(math.Log(nexcpNegligible)/math.Log(rho))))
	}
	buf = buf[:0]
	total := 1.0
	w := 1.0
	for i := n - 1; i >= n-keep; i-- {
		w *= rho
		buf = append(buf, wscore{scores[i], w})
		total += w
	}
	sort.Slice(buf, func(i, j int) bool { return buf[i].s < buf[j].s })
	need := (1 - alpha) * total * (1 - 1e-12)
	cum := 0.0
	for _, x := range buf {
		cum += x.w
		if cum >= need {
			return x.s, buf
		}
	}
	return math.Inf(1), buf
}

// wscore is a weighted score.
type wscore struct{ s, w float64 }

// pinballGrad is the derivative in x of the pinball (quantile) loss at
// level beta, l(x, y) = (y - x)(beta - 1{y < x}): 1{y < x} - beta.
func pinballGrad(beta, x, y float64) float64 {
	if y < x {
		return 1 - beta
	}
	return -beta
}

// boa is Bernstein online aggregation (Wintenberger 2017) of K experts
// with the gradient trick and one adaptive learning rate per expert, the
// aggregation rule Zaffran et al. (2022) use for AgACI (R package opera,
// "BOA"). With the aggregate x̂_t = sum_k w_k x_k and the loss gradient
// g_t at x̂_t, expert k's instantaneous regret is r_k = g_t (x̂_t - x_k);
// then
//
//	B_k = max(B_k, |r_k|),  V_k += r_k²,  eta_k = min(1/(2 B_k), sqrt(ln K / V_k)),
//	R_k += r_k - eta_k r_k²,  w_k ∝ eta_k exp(eta_k R_k) (uniform prior).
//
// Experts whose regret has always been 0 keep the prior weight.
type boa struct {
	w, b, v, r, eta []float64
}

func newBOA(k int) *boa {
	a := &boa{w: make([]float64, k), b: make([]float64, k), v: make([]float64, k), r: make([]float64, k), eta: make([]float64, k)}
	for i := range a.w {
		a.w[i] = 1 / float64(k)
	}
	return a
}

// predict is the aggregate sum_k w_k x_k.
func (a *boa) predict(x []float64) float64 {
	s := 0.0
	for k, xk := range x {
		s += a.w[k] * xk
	}
	return s
}

// update takes the experts' forecasts x, the aggregate pred made from
// them and the loss gradient g at pred, and updates the weights.
func (a *boa) update(x []float64, pred, g float64) {
	K := len(x)
	if K < 2 {
		return // one expert keeps weight 1
	}
	logK := math.Log(float64(K))
	for k, xk := range x {
		r := g * (pred - xk)
		a.b[k] = math.Max(a.b[k], math.Abs(r))
		a.v[k] += r * r
		if a.b[k] == 0 {
			continue
		}
		eta := 1 / (2 * a.b[k])
		if a.v[k] > 0 {
			eta = math.Min(eta, math.Sqrt(logK/a.v[k]))
		}
		a.eta[k] = eta
		a.r[k] += r - eta*r*r
	}
	if slices.Max(a.b) == 0 {
		return
	}
	// w_k ∝ eta_k exp(eta_k R_k), in logs against overflow; an expert
	// with no regret yet takes the smallest rate of the others.
	etaMin := math.Inf(1)
	for k := range a.eta {
		if a.b[k] > 0 {
			etaMin = math.Min(etaMin, a.eta[k])
		}
	}
	logw := make([]float64, K)
	top := math.Inf(-1)
	for k := range logw {
		eta := a.eta[k]
		if a.b[k] == 0 {
			eta = etaMin
		}
		logw[k] = math.Log(eta) + eta*a.r[k]
		top = math.Max(top, logw[k])
	}
	sum := 0.0
	for k := range logw {
		a.w[k] = math.Exp(logw[k] - top)
		sum += a.w[k]
	}
	for k := range a.w {
		a.w[k] /= sum
	}
}

// sortedWindow is a multiset of the last n scores (all when n is 0) in
// arrival order and sorted, for conformal quantiles over a moving window.
// Scores are never NaN (an unbounded score is +Inf).
type sortedWindow struct {
	n      int
	order  []float64 // arrival order, oldest first
	sorted []float64
}

// add appends s, dropping the oldest score when the window is full.
func (w *sortedWindow) add(s float64) {
	if w.n > 0 && len(w.order) == w.n {
		old := w.order[0]
		w.order = w.order[1:]
		i, _ := slices.BinarySearch(w.sorted, old)
		w.sorted = slices.Delete(w.sorted, i, i+1)
	}
	w.order = append(w.order, s)
	i, _ := slices.BinarySearch(w.sorted, s)
	w.sorted = slices.Insert(w.sorted, i, s)
}
