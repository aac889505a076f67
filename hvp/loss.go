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
	// that are probabilities, f in (0, 1).
	BinaryCrossEntropy
)

func (l Loss) String() string {
	switch l {
	case SquaredError:
		return "squared error"
	case BinaryCrossEntropy:
		return "binary cross-entropy"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// eval returns l(y, f) and its first and second derivatives in f.
func (l Loss) eval(y, f float64) (v, d1, d2 float64) {
	switch l {
	case BinaryCrossEntropy:
		// Keep log finite at the boundary: outputs of exactly 0 or 1 give
		// a large but finite loss instead of NaN.
		const eps = 1e-15
		f = math.Min(math.Max(f, eps), 1-eps)
		v = -(y*math.Log(f) + (1-y)*math.Log(1-f))
		d1 = -y/f + (1-y)/(1-f)
		d2 = y/(f*f) + (1-y)/((1-f)*(1-f))
		return v, d1, d2
	default:
		r := f - y
		return r * r, 2 * r, 2
	}
}

// SecondDerivative returns the curvature weight of the Gauss-Newton
// matrix for one term: the second derivative of l(y, f) in f, which is
// positive for both losses (2 for squared error, 1/f² or 1/(1-f)² for
// cross-entropy), so the Gauss-Newton matrix is positive semi-definite.
// It is the Lambda_b of docs/design.md, section 4.5 (times the term's weight).
func (l Loss) SecondDerivative(y, f float64) float64 {
	_, _, d2 := l.eval(y, f)
	return d2
}
