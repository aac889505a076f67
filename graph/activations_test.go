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

// TestActivationSliceRules checks the slice rules of the activations that
// have them (the assembly kernels) against their scalar rules, on a length
// that exercises the vector loops and their tails.
func TestActivationSliceRules(t *testing.T) {
	const n = 45
	x, dx, g, dg := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = -3 + 6*float64(i)/n
		dx[i] = math.Sin(float64(i))
		g[i] = math.Cos(float64(3 * i))
		dg[i] = 0.5 - float64(i%7)/7
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-14*math.Max(1, math.Abs(b)) }
	for _, a := range []*activation{actTanh} {
		v := a.vec
		if v == nil {
			t.Fatalf("%s has no slice rules", a.name)
		}
		y := make([]float64, n)
		v.f(y, x)
		dy := make([]float64, n)
		v.jvp(dy, y, dx)
		gx := make([]float64, n)
		for i := range gx {
			gx[i] = 1
		}
		v.vjp(gx, y, g)
		add, set := make([]float64, n), make([]float64, n)
		for i := range add {
			add[i], set[i] = 1, 7 // set must overwrite
		}
		v.vjpTangent(add, y, g, dg, dx)
		v.vjpTangentSet(set, y, g, dg, dx)
		d, dd := a.derivs()
		for i := range x {
			if !close(y[i], a.f(x[i])) {
				t.Errorf("%s(%g): slice %.17g, scalar %.17g", a.name, x[i], y[i], a.f(x[i]))
			}
			d1, d2 := d(x[i], y[i]), dd(x[i], y[i])
			if want := d1 * dx[i]; !close(dy[i], want) {
				t.Errorf("%s jvp at %g: %.17g, want %.17g", a.name, x[i], dy[i], want)
			}
			if want := 1 + d1*g[i]; !close(gx[i], want) {
				t.Errorf("%s vjp at %g: %.17g, want %.17g", a.name, x[i], gx[i], want)
			}
			want := d1*dg[i] + d2*dx[i]*g[i]
			if !close(add[i], 1+want) || !close(set[i], want) {
				t.Errorf("%s vjp tangent at %g: add %.17g, set %.17g, want %.17g", a.name, x[i], add[i]-1, set[i], want)
			}
		}
	}
}
