package hvp_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// fixtureObjective builds a one-batch objective on a PyTorch fixture: its
// inputs, targets = PyTorch outputs + noise (so the model is not at a
// minimum), and weights that are mostly 1 with some 0 and some 2.
func fixtureObjective(t *testing.T, fx *onnxtest.Fixture, loss hvp.Loss, seed uint64) (*hvp.Objective, []float64) {
	t.Helper()
	g, err := fx.Load()
	if err != nil {
		t.Fatal(err)
	}
	in, err := fx.InputsFor(g)
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	out := fx.Outputs[0].Data
	r := rand.New(rand.NewPCG(seed, 7))
	target := make([]float64, len(out))
	weight := make([]float64, len(out))
	for i, v := range out {
		target[i] = v + 0.3*r.NormFloat64()
		if loss == hvp.BinaryCrossEntropy {
			target[i] = float64(r.IntN(2))
		}
		switch u := r.Float64(); {
		case u < 0.15:
			weight[i] = 0
		case u < 0.3:
			weight[i] = 2
		default:
			weight[i] = 1
		}
	}
	return &hvp.Objective{Loss: loss, Batches: []hvp.Batch{{Program: p, Inputs: in, Target: target, Weight: weight}}}, g.Theta()
}

func randUnit(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	s := 0.0
	for i := range v {
		v[i] = r.NormFloat64()
		s += v[i] * v[i]
	}
	for i := range v {
		v[i] /= math.Sqrt(s)
	}
	return v
}

func axpy(a float64, x, y []float64) []float64 {
	out := make([]float64, len(y))
	for i := range y {
		out[i] = y[i] + a*x[i]
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func norm(a []float64) float64 { return math.Sqrt(dot(a, a)) }

// relErr is |a-b| / max(|a|, |b|, floor).
func relErr(a, b []float64, floor float64) float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return norm(d) / math.Max(math.Max(norm(a), norm(b)), floor)
}

// TestDerivativesFiniteDifferences checks, on every fixture model, the
// gradient against central differences of the loss, the Hessian-vector
// product against central differences of the gradient (both in random
// directions, relative error <= 1e-6), the symmetry u.Hv = v.Hu and that
// the Gauss-Newton product is symmetric and positive semi-definite.
func TestDerivativesFiniteDifferences(t *testing.T) {
	fixtures, err := onnxtest.PyTorch()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			t.Parallel()
			o, theta := fixtureObjective(t, fx, hvp.SquaredError, uint64(i))
			P := len(theta)
			r := rand.New(rand.NewPCG(uint64(i), 99))
			grad := make([]float64, P)
			if _, err := o.Gradient(ctx, theta, grad); err != nil {
				t.Fatal(err)
			}
			const h = 1e-5
			for k := 0; k < 3; k++ {
				u := randUnit(r, P)
				lp, _ := o.Value(ctx, axpy(h, u, theta))
				lm, _ := o.Value(ctx, axpy(-h, u, theta))
				fd := (lp - lm) / (2 * h)
				if e := math.Abs(fd-dot(grad, u)) / math.Max(math.Abs(fd), 1e-3*norm(grad)); e > 1e-6 {
					t.Errorf("gradient along u%d: %.12g, finite differences %.12g (rel. error %.2g)", k, dot(grad, u), fd, e)
				}
			}
			u, v := randUnit(r, P), randUnit(r, P)
			hv, hu := make([]float64, P), make([]float64, P)
			if err := o.HVP(ctx, theta, v, hv); err != nil {
				t.Fatal(err)
			}
			if err := o.HVP(ctx, theta, u, hu); err != nil {
				t.Fatal(err)
			}
			gp, gm := make([]float64, P), make([]float64, P)
			o.Gradient(ctx, axpy(h, v, theta), gp)
			o.Gradient(ctx, axpy(-h, v, theta), gm)
			fd := make([]float64, P)
			for j := range fd {
				fd[j] = (gp[j] - gm[j]) / (2 * h)
			}
			if e := relErr(hv, fd, 1e-8); e > 1e-6 {
				t.Errorf("Hv differs from finite differences of the gradient: relative error %.3g (|Hv| %.4g)", e, norm(hv))
			}
			if a, b := dot(u, hv), dot(v, hu); math.Abs(a-b) > 1e-10*math.Max(math.Abs(a), norm(hv)) {
				t.Errorf("u.Hv = %.15g but v.Hu = %.15g", a, b)
			}
			gu, gv := make([]float64, P), make([]float64, P)
			if err := o.GNVP(ctx, theta, v, gv); err != nil {
				t.Fatal(err)
			}
			o.GNVP(ctx, theta, u, gu)
			if a, b := dot(u, gv), dot(v, gu); math.Abs(a-b) > 1e-10*math.Max(math.Abs(a), norm(gv)) {
				t.Errorf("Gauss-Newton not symmetric: u.Gv = %.15g, v.Gu = %.15g", a, b)
			}
			if q := dot(v, gv); q < -1e-12*norm(gv) {
				t.Errorf("Gauss-Newton not positive semi-definite: v.Gv = %g", q)
			}
		})
	}
}

// batchOutputs runs batch b forward at theta and returns its first
// output.
func batchOutputs(t *testing.T, b hvp.Batch, theta []float64) []float64 {
	t.Helper()
	outs, err := b.Program.NewState().Forward(theta, b.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float64(nil), outs[0].F...)
}

// TestGaussNewtonMatchesJacobian checks G v against J^T D (J v) with J v
// from central differences of the outputs, for squared error (D = 2 w).
func TestGaussNewtonMatchesJacobian(t *testing.T) {
	fixtures, err := onnxtest.PyTorch()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fx := fixtures[0]
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 3)
	b := o.Batches[0]
	P := len(theta)
	r := rand.New(rand.NewPCG(5, 5))
	u, v := randUnit(r, P), randUnit(r, P)
	outAt := func(th []float64) []float64 { return batchOutputs(t, b, th) }
	jac := func(d []float64) []float64 {
		const h = 1e-5
		p, m := outAt(axpy(h, d, theta)), outAt(axpy(-h, d, theta))
		for i := range p {
			p[i] = (p[i] - m[i]) / (2 * h)
		}
		return p
	}
	ju, jv := jac(u), jac(v)
	want := 0.0
	for e := range ju {
		want += ju[e] * 2 * b.Weight[e] * jv[e]
	}
	gv := make([]float64, P)
	if err := o.GNVP(ctx, theta, v, gv); err != nil {
		t.Fatal(err)
	}
	if got := dot(u, gv); math.Abs(got-want) > 1e-7*math.Max(1, math.Abs(want)) {
		t.Errorf("u.Gv = %.12g, (Ju)^T D (Jv) = %.12g", got, want)
	}
}

// TestRidge: with a ridge penalty (r/2)|theta|^2 the value, gradient,
// Hessian-vector product and dense curvature include it, and job
// gradients do not.
func TestRidge(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "gru_1l_bf")
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 31)
	P := len(theta)
	g0 := make([]float64, P)
	l0, _ := o.Gradient(ctx, theta, g0)
	o.Ridge = 0.7
	g1 := make([]float64, P)
	l1, _ := o.Gradient(ctx, theta, g1)
	if math.Abs(l1-l0-0.35*dot(theta, theta)) > 1e-9*l1 {
		t.Errorf("loss with ridge %g, without %g", l1, l0)
	}
	for i := range g1 {
		if math.Abs(g1[i]-g0[i]-0.7*theta[i]) > 1e-12*(1+math.Abs(g1[i])) {
			t.Fatalf("gradient[%d] = %g, want %g", i, g1[i], g0[i]+0.7*theta[i])
		}
	}
	r := rand.New(rand.NewPCG(8, 8))
	v := randUnit(r, P)
	hv := make([]float64, P)
	if err := o.HVP(ctx, theta, v, hv); err != nil {
		t.Fatal(err)
	}
	const h = 1e-5
	gp, gm := make([]float64, P), make([]float64, P)
	o.Gradient(ctx, axpy(h, v, theta), gp)
	o.Gradient(ctx, axpy(-h, v, theta), gm)
	fd := make([]float64, P)
	for j := range fd {
		fd[j] = (gp[j] - gm[j]) / (2 * h)
	}
	if e := relErr(hv, fd, 1e-8); e > 1e-6 {
		t.Errorf("Hv with ridge differs from finite differences by %.3g", e)
	}
	m, err := o.Dense(ctx, hvp.Hessian, theta)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < P; i += 17 {
		e := make([]float64, P)
		e[i] = 1
		col := make([]float64, P)
		o.HVP(ctx, theta, e, col)
		if math.Abs(m.At(i, i)-col[i]) > 1e-9*(1+math.Abs(col[i])) {
			t.Errorf("dense H[%d][%d] = %g, H e_i gives %g", i, i, m.At(i, i), col[i])
		}
	}
	jg := [][]float64{nil}
	if err := o.Gradients(ctx, theta, []hvp.Job{{Batch: 0}}, jg, nil); err != nil {
		t.Fatal(err)
	}
	if relErr(jg[0], g0, 1e-300) > 1e-12 {
		t.Error("a job's gradient includes the ridge penalty")
	}
}
