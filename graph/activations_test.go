package graph

import (
	"math"
	"testing"
)

// TestActivationDerivatives checks f', f” of every activation against
// central differences of f (and of f'), at points away from kinks, and
// the output-based forms against the input-based ones.
func TestActivationDerivatives(t *testing.T) {
	acts := []*activation{
		actTanh, actSigmoid, actRelu, actExp, actLog, actNeg, actSoftsign, actSoftplus,
		actLeakyRelu(0.3), actThresholdedRelu(0.7), actScaledTanh(1.5, 0.8),
		actHardSigmoid(0.3, 0.4), actElu(1.3), actAffine(2.5, -1), actClip(-0.9, 1.1),
	}
	points := []float64{-2.3, -1.45, -0.37, 0.21, 0.63, 1.77, 3.1}
	const h = 1e-5
	for _, a := range acts {
		for _, x := range points {
			if a == actLog && x <= 0 {
				continue
			}
			fd1 := (a.f(x+h) - a.f(x-h)) / (2 * h)
			fd2 := (a.d(x+h) - a.d(x-h)) / (2 * h)
			if e := math.Abs(fd1 - a.d(x)); e > 1e-6*math.Max(1, math.Abs(fd1)) {
				t.Errorf("%s'(%g) = %.10g, finite differences %.10g", a.name, x, a.d(x), fd1)
			}
			if e := math.Abs(fd2 - a.dd(x)); e > 1e-6*math.Max(1, math.Abs(fd2)) {
				t.Errorf("%s''(%g) = %.10g, finite differences %.10g", a.name, x, a.dd(x), fd2)
			}
			d, dd := a.derivs()
			y := a.f(x)
			if math.Abs(d(x, y)-a.d(x)) > 1e-14 || math.Abs(dd(x, y)-a.dd(x)) > 1e-13 {
				t.Errorf("%s at %g: output-based derivatives (%g, %g) differ from input-based (%g, %g)", a.name, x, d(x, y), dd(x, y), a.d(x), a.dd(x))
			}
		}
	}
}
