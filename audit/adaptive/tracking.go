package adaptive

import (
	"math"
)

// The online pieces of the kinds that stay finite (run.go runs them
// along each series): ACI clipped to a finite quantile, quantile
// tracking and conformal PID control (Angelopoulos, Candès and
// Tibshirani 2023), their scale-free step, the integrator's saturation,
// and the bookkeeping of their long-run bounds for any step sequence
// (Angelopoulos, Barber and Bates 2024).

// qtUpdate is one step of quantile tracking, online gradient descent on
// the pinball loss of the score's quantile: q_{t+1} = q_t + eta (err_t -
// alpha), a miss raising the quantile by eta (1 - alpha) and a cover
// lowering it by eta alpha.
func qtUpdate(alpha, q, eta float64, miss bool) float64 {
	err := 0.0
	if miss {
		err = 1
	}
	return q + eta*(err-alpha)
}

// saturation is conformal PID's integrator term after n labels whose
// errors sum to sum (sum of err - alpha): K_I tan(sum log(n+1) / (C_sat
// (n+1))), the paper's tan saturation with log growth, in units of scale,
// and limited to [-limit, limit]: the tan reaches ±Inf when its argument
// reaches ±pi/2, where the term is ±limit instead, so that the interval
// stays finite. 0 before any label or with ki < 0 (integrator off).
func saturation(sum float64, n int, ki, csat, scale, limit float64) float64 {
	if n == 0 || ki < 0 {
		return 0
	}
	x := sum * math.Log(float64(n+1)) / (csat * float64(n+1))
	var r float64
	switch {
	case x >= math.Pi/2:
		r = math.Inf(1)
	case x <= -math.Pi/2:
		r = math.Inf(-1)
	default:
		r = ki * scale * math.Tan(x)
	}
	return math.Max(-limit, math.Min(limit, r))
}

// decayed is a step at the n-th label (n >= 1) of a state with step
// decay e: step n^-e (the step itself when e is 0).
func decayed(step float64, n int, e float64) float64 {
	if e == 0 {
		return step
	}
	return step * math.Pow(float64(n), -e)
}

// stepLog records the steps s_1, ..., s_K an online state took, for the
// bound on its long-run miscoverage: whatever the step sequence, the
// errors sum to sum_k (x_{k+1} - x_k)/s_k for a state x that moves by
// s_k (err_k - alpha), which is at most R (1/s_1 + 1/s_K + sum_k |1/s_k -
// 1/s_{k-1}|)/2 for a state that stays in a range of width R
// (Angelopoulos, Barber and Bates 2024, with the state centred); with a
// constant step it is R/s.
type stepLog struct {
	first, last, dsum, max float64
	k                      int
}

func (s *stepLog) add(x float64) {
	if s.k == 0 {
		s.first = x
	} else {
		s.dsum += math.Abs(1/x - 1/s.last)
	}
	s.last = x
	s.max = math.Max(s.max, x)
	s.k++
}

// bound is the bound on |sum of (err - alpha)| over the labels taken
// for a state whose range has width r.
func (s *stepLog) bound(r float64) float64 {
	if s.k == 0 {
		return 0
	}
	return r * (1/s.first + 1/s.last + s.dsum) / 2
}

// Tally are one chain's figures that the long-run bounds of the finite
// kinds need, from Run.
type Tally struct {
	// Labelled counts the chain's labelled forecasts; Pending is d, the
	// most labelled forecasts of the chain still waiting for their label
	// when a forecast is made (0 when each label arrives before the next
	// forecast); Unapplied those whose label never arrived before the
	// chain ended.
	Labelled, Pending, Unapplied int
	// Capped counts ACI clipped's misses at a working level at or below
	// 0, where ACI would have answered the whole line.
	Capped int
	// ClippedSum and TrackingSum bound |sum of (err - alpha)| over the
	// chain's labelled forecasts for ACI clipped and quantile tracking
	// (+Inf when a score is unbounded).
	ClippedSum, TrackingSum float64
}

// finish computes the bounds from the steps the states took: ACI
// clipped's working level stays within [-s (1 + d + Capped), 1 + s (1 +
// d)], and quantile tracking's quantile within [-s (1 + d), b + s (1 +
// d)], s the largest step and b the largest score (and the first
// quantile); each forecast still unapplied adds at most 1.
func (t *Tally) finish(aci, qt *stepLog, b float64) {
	d := float64(t.Pending)
	t.ClippedSum = aci.bound(1+aci.max*(2+2*d+float64(t.Capped))) + float64(t.Unapplied)
	t.TrackingSum = qt.bound(b+2*qt.max*(1+d)) + float64(t.Unapplied)
}

// maxFinite is the largest finite value of xs and m (m when there is
// none larger).
func maxFinite(m float64, xs []float64) float64 {
	for _, x := range xs {
		if !math.IsInf(x, 0) && x > m {
			m = x
		}
	}
	return m
}

// unit is the scale of a forecast's scores when no score is known yet:
// on the split base the jackknife+ interval's half-width (when finite
// and positive), else 1 (on the jackknife base, the score 1 is the
// jackknife+ interval itself).
func (fm family) unit() float64 {
	if h, ok := fm.halfWidth(); ok && h > 0 {
		return h
	}
	return 1
}

// halfWidth is conformal PID's scorecast on the split base: the
// jackknife+ interval's half-width, the audited model's own
// leave-one-block-out forecast of the score |y - prediction| at level
// 1 - alpha; ok is false on the jackknife base (whose score 1 is that
// interval already) or when the interval is unbounded.
func (fm family) halfWidth() (float64, bool) {
	h := (fm.Upper - fm.Lower) / 2
	if fm.jk || !(h >= 0) || math.IsInf(h, 0) {
		return 0, false
	}
	return h, true
}

// finiteAt is the base family's member at q for a quantile tracked on
// the scores: empty (both limits at the prediction) when q < 0.
func (fm family) finiteAt(q float64) (lo, up float64, empty bool) {
	if q < 0 {
		return fm.Pred, fm.Pred, true
	}
	return fm.at(q)
}
