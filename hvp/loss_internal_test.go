package hvp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLossDerivativesFiniteDifferences checks each single-element loss's
// first and second derivatives in f against central differences of its
// value and first derivative (relative error <= 1e-7), including logits
// far from 0 where a naive log(1 + exp(f)) overflows.
func TestLossDerivativesFiniteDifferences(t *testing.T) {
	const h = 1e-6
	cases := []struct {
		l    Loss
		y, f float64
	}{
		{SquaredError, 0.3, -1.2}, {BinaryCrossEntropy, 1, 0.3}, {BinaryCrossEntropy, 0, 0.8},
		{BinaryCrossEntropyLogits, 1, 0.7}, {BinaryCrossEntropyLogits, 0, -2.5}, {BinaryCrossEntropyLogits, 0.3, 4},
		{BinaryCrossEntropyLogits, 1, -30}, {BinaryCrossEntropyLogits, 0, 30},
	}
	for _, c := range cases {
		v, d1, d2 := c.l.eval(c.y, c.f)
		vp, d1p, _ := c.l.eval(c.y, c.f+h)
		vm, d1m, _ := c.l.eval(c.y, c.f-h)
		if fd := (vp - vm) / (2 * h); math.Abs(fd-d1) > 1e-7*math.Max(1, math.Abs(d1)) {
			t.Errorf("%v at y=%g f=%g: l' = %.10g, finite differences %.10g", c.l, c.y, c.f, d1, fd)
		}
		if fd := (d1p - d1m) / (2 * h); math.Abs(fd-d2) > 1e-7*math.Max(1, math.Abs(d2)) {
			t.Errorf("%v at y=%g f=%g: l'' = %.10g, finite differences %.10g", c.l, c.y, c.f, d2, fd)
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			t.Errorf("%v at y=%g f=%g: loss %g", c.l, c.y, c.f, v)
		}
	}
	// Hand-worked: BCE on logits at f = 0 is log 2 whatever y, slope 1/2 - y, curvature 1/4.
	if v, d1, d2 := BinaryCrossEntropyLogits.eval(1, 0); math.Abs(v-math.Ln2) > 1e-15 || d1 != -0.5 || d2 != 0.25 {
		t.Errorf("BCE on logits at 0: %g %g %g, want log 2, -1/2, 1/4", v, d1, d2)
	}
}

// TestGroupTermsFiniteDifferences checks softmax cross-entropy's loss,
// gradient and Hessian product on one term of K = 4 logits with unequal
// element weights and smoothed, class-weighted targets against central
// differences, and GroupCurvature's rows against the Hessian.
func TestGroupTermsFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	K := 4
	f, df := make([]float64, K), make([]float64, K)
	for k := range f {
		f[k], df[k] = 3*r.NormFloat64(), r.NormFloat64()
	}
	y := SoftTargets(2, K, []float64{0.5, 1, 2, 1.5}, 0.1)
	w := []float64{1.5, 1.5, 1.5, 1.5}
	g, dg, p := make([]float64, K), make([]float64, K), make([]float64, K)
	v := groupTerms(y, w, f, df, g, dg, p)
	// Loss by hand: -sum_k w y_k log softmax(f)_k.
	Softmax(f, p)
	want := 0.0
	for k := range f {
		want -= w[k] * y[k] * math.Log(p[k])
	}
	if math.Abs(v-want) > 1e-13*math.Abs(want) {
		t.Errorf("loss %.15g, by hand %.15g", v, want)
	}
	const h = 1e-6
	at := func(s float64) (float64, []float64) {
		fs := make([]float64, K)
		for k := range fs {
			fs[k] = f[k] + s*df[k]
		}
		gs := make([]float64, K)
		return groupTerms(y, w, fs, nil, gs, nil, make([]float64, K)), gs
	}
	vp, gp := at(h)
	vm, gm := at(-h)
	gdf := 0.0
	for k := range g {
		gdf += g[k] * df[k]
	}
	if fd := (vp - vm) / (2 * h); math.Abs(fd-gdf) > 1e-7*math.Max(1, math.Abs(gdf)) {
		t.Errorf("g.df = %.10g, finite differences %.10g", gdf, fd)
	}
	for k := range dg {
		if fd := (gp[k] - gm[k]) / (2 * h); math.Abs(fd-dg[k]) > 1e-7 {
			t.Errorf("(H df)_%d = %.10g, finite differences %.10g", k, dg[k], fd)
		}
	}
	// sum_k a_k (a_k . df) = H df.
	hdf := make([]float64, K)
	for _, a := range GroupCurvature(y, w, f) {
		ad := 0.0
		for j := range a {
			ad += a[j] * df[j]
		}
		for j := range a {
			hdf[j] += a[j] * ad
		}
	}
	for k := range hdf {
		if math.Abs(hdf[k]-dg[k]) > 1e-13 {
			t.Errorf("GroupCurvature: (sum a a^T df)_%d = %.15g, H df %.15g", k, hdf[k], dg[k])
		}
	}
	// Hand-worked SoftTargets: K = 3, class 1, weights 1, eps 0.3.
	st := SoftTargets(1, 3, nil, 0.3)
	if math.Abs(st[0]-0.1) > 1e-15 || math.Abs(st[1]-0.8) > 1e-15 || math.Abs(st[2]-0.1) > 1e-15 {
		t.Errorf("SoftTargets(1, 3, nil, 0.3) = %v, want [0.1 0.8 0.1]", st)
	}
}
