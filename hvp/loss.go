package hvp

import (
	"fmt"
	"math"
)

// Loss is the per-term loss l(y, f) of a target y and a model output f
// (docs/design.md, section 2.1).
type Loss int

const (
	// SquaredError is l = (y - f)², the default.
	SquaredError Loss = iota
	// BinaryCrossEntropy is l = -(y log f + (1-y) log(1-f)) for outputs
	// that are probabilities, f in (0, 1) (PyTorch's nn.BCELoss).
	BinaryCrossEntropy
	// BinaryCrossEntropyLogits is l = -(y log s + (1-y) log(1-s)),
	// s = sigmoid(f), for outputs that are logits (PyTorch's
	// nn.BCEWithLogitsLoss; its pos_weight p is the term weight p on the
	// terms with y = 1). Its second derivative in f is s(1-s).
	BinaryCrossEntropyLogits
	// SoftmaxCrossEntropy is l = -sum_k y_k log p_k, p = softmax(f), over
	// the last axis of the output, which holds K logits (PyTorch's
	// nn.CrossEntropyLoss). One loss term is the group of K consecutive
	// elements; its targets y_k are the (smoothed, class-weighted) target
	// distribution of SoftTargets, and a term's weight is every element's
	// weight (element k contributes w_k y_k log p_k). Its Hessian in f is
	// S (diag(p) - p p^T), S = sum_k w_k y_k: the Gauss-Newton matrix is
	// J^T S (diag(p) - p p^T) J.
	SoftmaxCrossEntropy
	// BinaryCrossEntropySigmoid is BinaryCrossEntropy on a probability
	// output that is the sigmoid of a logit (a model trained with
	// nn.BCEWithLogitsLoss, audited through an appended sigmoid, or one
	// with the sigmoid inside): the same loss, gradient and Hessian, but
	// its Gauss-Newton weight is the Fisher weight 1/(f(1-f)), not
	// y/f² + (1-y)/(1-f)², so that with the output Jacobian J_p = f(1-f)
	// J of the probability its Gauss-Newton matrix is the logit's,
	// J^T f(1-f) J: the curvature of the loss in the logit, positive and
	// independent of the label. (The other split weighs a confidently
	// wrong forecast by about 1 and a confidently right one by about 0.)
	BinaryCrossEntropySigmoid
)

func (l Loss) String() string {
	switch l {
	case SquaredError:
		return "squared error"
	case BinaryCrossEntropy:
		return "binary cross-entropy"
	case BinaryCrossEntropyLogits:
		return "binary cross-entropy on logits"
	case SoftmaxCrossEntropy:
		return "softmax cross-entropy"
	case BinaryCrossEntropySigmoid:
		return "binary cross-entropy on a sigmoid output"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// Grouped reports whether one loss term is a group of elements (the K
// logits of the output's last axis) rather than one element: its
// curvature in the outputs is then a K×K block, not a number.
func (l Loss) Grouped() bool { return l == SoftmaxCrossEntropy }

// eval returns l(y, f) and its first and second derivatives in f, for the
// losses whose terms are single elements.
func (l Loss) eval(y, f float64) (v, d1, d2 float64) {
	switch l {
	case BinaryCrossEntropy, BinaryCrossEntropySigmoid:
		// Keep log finite at the boundary: outputs of exactly 0 or 1 give
		// a large but finite loss instead of NaN.
		const eps = 1e-15
		f = math.Min(math.Max(f, eps), 1-eps)
		v = -(y*math.Log(f) + (1-y)*math.Log(1-f))
		d1 = -y/f + (1-y)/(1-f)
		d2 = y/(f*f) + (1-y)/((1-f)*(1-f))
		return v, d1, d2
	case BinaryCrossEntropyLogits:
		// softplus(f) - y f, without overflow for large |f|.
		s := Sigmoid(f)
		v = math.Max(f, 0) + math.Log1p(math.Exp(-math.Abs(f))) - y*f
		return v, s - y, s * (1 - s)
	default:
		r := f - y
		return r * r, 2 * r, 2
	}
}

// Sigmoid is 1/(1+exp(-f)), computed without overflow: the probability a
// logit output stands for.
func Sigmoid(f float64) float64 {
	if f >= 0 {
		return 1 / (1 + math.Exp(-f))
	}
	e := math.Exp(f)
	return e / (1 + e)
}

// Softmax writes softmax(f) into p (len(p) = len(f)) and returns
// log(sum_k exp(f_k)), computed from the largest logit so that it cannot
// overflow.
func Softmax(f, p []float64) (logSumExp float64) {
	m := math.Inf(-1)
	for _, x := range f {
		m = math.Max(m, x)
	}
	s := 0.0
	for k, x := range f {
		p[k] = math.Exp(x - m)
		s += p[k]
	}
	for k := range p {
		p[k] /= s
	}
	return m + math.Log(s)
}

// SoftTargets returns the targets y_k of SoftmaxCrossEntropy for one term
// whose label is class c of K, as PyTorch's nn.CrossEntropyLoss(weight=w,
// label_smoothing=eps) weighs them: y_k = (1-eps) w_c [k = c] + (eps/K)
// w_k, so that -sum_k y_k log p_k is PyTorch's unreduced loss of the term.
// weights nil means all classes weigh 1. (PyTorch's reduction "mean"
// divides the sum by sum over terms of w_c; give that in the term
// weights or the ridge.)
func SoftTargets(c, K int, weights []float64, eps float64) []float64 {
	y := make([]float64, K)
	wk := func(k int) float64 {
		if weights == nil {
			return 1
		}
		return weights[k]
	}
	for k := range y {
		y[k] = eps / float64(K) * wk(k)
	}
	y[c] += (1 - eps) * wk(c)
	return y
}

// SecondDerivative returns the curvature weight of the Gauss-Newton
// matrix for one term: the second derivative of l(y, f) in f, which is
// positive for the losses of single elements (2 for squared error, 1/f²
// or 1/(1-f)² for cross-entropy, 1/(f(1-f)) for cross-entropy on a
// sigmoid output, s(1-s) on logits), so the Gauss-Newton
// matrix is positive semi-definite. It is the Lambda_b of
// docs/design.md, section 4.5 (times the term's weight). Grouped losses
// have a K×K block instead (GroupCurvature).
func (l Loss) SecondDerivative(y, f float64) float64 {
	_, _, d2 := l.eval(y, f)
	return l.gnWeight(y, f, d2)
}

// gnWeight returns the Gauss-Newton weight of a term whose exact second
// derivative in f is d2: d2 itself, except for BinaryCrossEntropySigmoid
// (the Fisher weight 1/(f(1-f)), f kept in [1e-15, 1-1e-15]).
func (l Loss) gnWeight(_, f, d2 float64) float64 {
	if l != BinaryCrossEntropySigmoid {
		return d2
	}
	const eps = 1e-15
	f = math.Min(math.Max(f, eps), 1-eps)
	return 1 / (f * (1 - f))
}

// groupTerms evaluates one term of a grouped loss (SoftmaxCrossEntropy)
// at logits f with targets y and weights w (all of length K): it returns
// the weighted loss, writes its gradient in f into g, and, when df is
// given, the Hessian times df into dg (else zeros). p is scratch of
// length K.
func groupTerms(y, w, f, df, g, dg, p []float64) float64 {
	lse := Softmax(f, p)
	S, v := 0.0, 0.0
	for k := range f {
		c := w[k] * y[k]
		S += c
		if c != 0 {
			v += c * (lse - f[k])
		}
	}
	pdf := 0.0
	if df != nil {
		for k := range f {
			pdf += p[k] * df[k]
		}
	}
	for k := range f {
		g[k] = S*p[k] - w[k]*y[k]
		if dg != nil {
			if df != nil {
				dg[k] = S * p[k] * (df[k] - pdf)
			} else {
				dg[k] = 0
			}
		}
	}
	return v
}

// GroupCurvature returns, for one term of SoftmaxCrossEntropy at logits f
// with targets y and weights w, K rows a_k (each of length K) with
// sum_k a_k a_k^T = S (diag(p) - p p^T), the term's Hessian in f: a_k =
// sqrt(S p_k) (e_k - p). A Gauss-Newton matrix J^T D J is then the sum of
// the outer products of the K vectors J^T a_k, as if the term were K
// terms of unit curvature.
func GroupCurvature(y, w, f []float64) [][]float64 {
	K := len(f)
	p := make([]float64, K)
	Softmax(f, p)
	S := 0.0
	for k := range f {
		S += w[k] * y[k]
	}
	rows := make([][]float64, K)
	for k := range rows {
		a := make([]float64, K)
		s := math.Sqrt(S * p[k])
		for j := range a {
			a[j] = -s * p[j]
		}
		a[k] += s
		rows[k] = a
	}
	return rows
}
