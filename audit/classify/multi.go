package classify

import (
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// Multi is the audit of a classifier whose output's last axis holds the
// K logits of its classes (a model trained with nn.CrossEntropyLoss,
// audited with hvp.SoftmaxCrossEntropy): its loss terms' targets, the one
// number per forecast that the interval arithmetic of package audit reads
// (At), and a forecast's probabilities, their intervals and its sets
// (Point).
//
// The number At gives a labelled forecast is 1 - S(p, y), S the set
// score (LAC: 1 - p_y, so the number is the probability of the true
// class), against a target of 1: its absolute residual is the score
// itself. The leave-one-block-out residuals of the training forecasts are
// then their scores under their blocks' models, which is what the
// jackknife+ sets compare with (JackknifeSetK), and an interval of that
// number holds 1 exactly when the jackknife+ set holds the label: the
// regression figures of a K-class audit are those of its sets.
type Multi struct {
	// K is the number of classes.
	K int
	// Score is the nonconformity score of the sets.
	Score Score
	// Weights are the class weights the model was trained with
	// (nn.CrossEntropyLoss's weight; nil: all 1); Smoothing its
	// label_smoothing.
	Weights   []float64
	Smoothing float64
}

// Multi returns the audit of a model of K logits that o asks for (o nil:
// the defaults), checking its class weights and label smoothing; K 0 (not
// a model of logits) is nil.
func (o *Options) Multi(K int) (*Multi, error) {
	if o == nil {
		o = &Options{}
	}
	if K == 0 {
		return nil, nil
	}
	if K < 2 {
		return nil, fmt.Errorf("audit: softmax cross-entropy needs K >= 2 logits, not %d", K)
	}
	if len(o.ClassWeights) > 0 && len(o.ClassWeights) != K {
		return nil, fmt.Errorf("audit: %d class weights for a model of %d classes: give one weight per class", len(o.ClassWeights), K)
	}
	if !(o.Smoothing >= 0 && o.Smoothing < 1) {
		return nil, fmt.Errorf("audit: label smoothing %g: give a number in [0, 1)", o.Smoothing)
	}
	return &Multi{K: K, Score: o.Score, Weights: o.ClassWeights, Smoothing: o.Smoothing}, nil
}

// Labels returns n labels -1 (none), the labels of a batch's output
// positions that Targets sets; m nil gives nil.
func (m *Multi) Labels(n int) []int32 {
	if m == nil {
		return nil
	}
	return slices.Repeat([]int32{-1}, n)
}

// Targets writes into target and weight (K elements each) the targets
// and weights of the loss term of label y, and y into *label: PyTorch's
// soft targets (hvp.SoftTargets, class weights and label smoothing
// included) with weight 1. A label that is not a class index 0..K-1 is
// an error.
func (m *Multi) Targets(y float64, target, weight []float64, label *int32) error {
	c := int(y)
	if float64(c) != y || c < 0 || c >= m.K {
		return fmt.Errorf("target %g is not a class index 0..%d (softmax cross-entropy with %d logits)", y, m.K-1, m.K)
	}
	*label = int32(c)
	copy(target, hvp.SoftTargets(c, m.K, m.Weights, m.Smoothing))
	for k := range weight[:m.K] {
		weight[k] = 1
	}
	return nil
}

// Probs returns softmax(f), the class probabilities of logits f.
func Probs(f []float64) []float64 {
	p := make([]float64, len(f))
	hvp.Softmax(f, p)
	return p
}

// uniformOf is the u of a forecast's randomised scores (Score.Randomized):
// a function of its probabilities, the same for every label.
func uniformOf(p []float64) float64 {
	keys := make([]uint64, len(p))
	for k, q := range p {
		keys[k] = math.Float64bits(q)
	}
	return Uniform(keys...)
}

// At returns the target and the number the interval arithmetic reads
// for a forecast of logits f (K of them) and label y: 1 and 1 - S(p, y),
// S the randomised score (u from p: uniformOf); without a label (y < 0)
// NaN and the top class's probability.
func (m *Multi) At(f []float64, y int) (target, value float64) {
	p := Probs(f[:m.K])
	if y < 0 || y >= m.K {
		top := 0.0
		for _, q := range p {
			top = math.Max(top, q)
		}
		return math.NaN(), top
	}
	return 1, 1 - m.Score.Randomized(p, y, uniformOf(p))
}

// Point returns the forecast of logits f (K) with label y (-1: none):
// its probabilities, the jackknife interval of each class's probability
// from the leave-one-block-out models' logits loo[b] (ProbInterval; nil
// or NaN logits: a block not estimated), and its jackknife+ set
// (JackknifeSetK) against the training forecasts' scores res (At's
// residuals; skip as in JackknifeSet).
func (m *Multi) Point(alpha float64, f []float64, y int, loo [][]float64, res []interval.Residual, skip interval.Skip) Forecast {
	fc := Forecast{Probs: Probs(f[:m.K]), Label: -1, ProbLower: math.NaN(), ProbUpper: math.NaN(), score: m.Score}
	if y >= 0 && y < m.K {
		fc.Label = y
	}
	fc.u = uniformOf(fc.Probs)
	lp := make([][]float64, len(loo))
	for b, l := range loo {
		if len(l) >= m.K && !math.IsNaN(l[0]) {
			lp[b] = Probs(l[:m.K])
		}
	}
	fc.Lowers, fc.Uppers = make([]float64, m.K), make([]float64, m.K)
	pk := make([]float64, len(lp))
	for k := range m.K {
		for b, p := range lp {
			pk[b] = math.NaN()
			if p != nil {
				pk[b] = p[k]
			}
		}
		fc.Lowers[k], fc.Uppers[k] = ProbInterval(alpha, fc.Probs[k], pk)
	}
	fc.Set = JackknifeSetK(m.Score, alpha, m.K, lp, res, skip, fc.u)
	return fc
}

// JackknifeSetK returns the jackknife+ set of a K-class forecast (Romano,
// Sesia and Candès 2020, with leave-one-block-out models): label y is in
// the set when
//
//	#{i : S(p_{-b_i}, y, u) > s_i} < (1 - alpha)(n + 1),
//
// over the training forecasts' scores s_i under their blocks' models
// (K classes)
// (res, each with its block b_i; skip drops those a self-audit leaves
// out), S the randomised score s (u the forecast's uniform) and p_b the
// forecast's probabilities under block b's model (lp[b]; nil: a block not
// estimated, whose scores are left out). n counts the scores used. It is
// JackknifeSet for K classes: the coverage is at least 1 - 2 alpha, and
// about 1 - alpha in practice.
func JackknifeSetK(s Score, alpha float64, K int, lp [][]float64, res []interval.Residual, skip interval.Skip, u float64) []int {
	sc := make([][]float64, len(lp))
	for b, p := range lp {
		if len(p) != K {
			continue
		}
		sc[b] = make([]float64, K)
		for y := range p {
			sc[b][y] = s.Randomized(p, y, u)
		}
	}
	count := make([]int, K)
	n := 0
	for _, e := range res {
		if skip.Drops(e) || e.Blk < 0 || e.Blk >= len(sc) || sc[e.Blk] == nil {
			continue
		}
		n++
		for y, v := range sc[e.Blk] {
			if v > e.R {
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

// SplitFrom sets f's split-conformal set from its split-conformal limits
// [lo, up] of the number the interval arithmetic reads: for a binary
// forecast the labels inside the limits of its probability (Between);
// for a K-class one (Multi.Point) the labels whose randomised score is
// at most the conformal quantile q = (up - lo)/2 of the calibration
// scores (At's number is 1 - S, its limits 1 - S ± q).
func (f *Forecast) SplitFrom(lo, up float64) {
	if f.Lowers == nil {
		f.Split = Between(lo, up)
		return
	}
	q := (up - lo) / 2
	f.Split = []int{}
	for y := range f.Probs {
		if f.score.Randomized(f.Probs, y, f.u) <= q {
			f.Split = append(f.Split, y)
		}
	}
}

// Logits are the K logits of a chunk of forecasts under every
// leave-one-block-out model and under the trained model, gathered from
// the models' outputs at the forecasts' positions (that of class 0's
// logit, the others following): what Point reads, filled by package
// audit's chunked limits.
type Logits struct {
	m    *Multi
	src  []int
	loo  [][]float64 // by block, K per forecast
	base []float64
}

// Logits returns the logits of the forecasts at positions src of a
// model's output, for the given number of blocks (m nil: nil).
func (m *Multi) Logits(blocks int, src []int) *Logits {
	if m == nil {
		return nil
	}
	return &Logits{m: m, src: src, loo: make([][]float64, blocks)}
}

// Add gathers block b's output out (b < 0: the trained model's). Calls
// for different blocks may run concurrently; l nil does nothing.
func (l *Logits) Add(b int, out []float64) {
	if l == nil {
		return
	}
	dst := make([]float64, 0, len(l.src)*l.m.K)
	for _, q := range l.src {
		dst = append(dst, out[q:q+l.m.K]...)
	}
	if b < 0 {
		l.base = dst
	} else {
		l.loo[b] = dst
	}
}

// Point is Multi.Point of forecast j with label y (-1: none).
func (l *Logits) Point(alpha float64, j, y int, res []interval.Residual, skip interval.Skip) Forecast {
	K := l.m.K
	loo := make([][]float64, len(l.loo))
	for b, v := range l.loo {
		if v != nil {
			loo[b] = v[j*K : (j+1)*K]
		}
	}
	return l.m.Point(alpha, l.base[j*K:(j+1)*K], y, loo, res, skip)
}
