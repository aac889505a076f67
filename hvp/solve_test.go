package hvp_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

func fixtureByName(t *testing.T, name string) *onnxtest.Fixture {
	t.Helper()
	fixtures, err := onnxtest.PyTorch()
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range fixtures {
		if fx.Name == name {
			return fx
		}
	}
	t.Fatalf("no fixture %q", name)
	return nil
}

// sliceBatch takes entry b of axis ax of t, keeping the axis with size 1.
func sliceBatch(t *graph.Tensor, ax, b int) *graph.Tensor {
	shape := append([]int(nil), t.Shape...)
	outer := 1
	for _, d := range shape[:ax] {
		outer *= d
	}
	inner := 1
	for _, d := range shape[ax+1:] {
		inner *= d
	}
	n := shape[ax]
	shape[ax] = 1
	if t.DType == graph.Int {
		out := graph.NewInt(shape, nil)
		for o := 0; o < outer; o++ {
			copy(out.I[o*inner:(o+1)*inner], t.I[(o*n+b)*inner:(o*n+b+1)*inner])
		}
		return out
	}
	out := graph.NewFloat(shape, nil)
	for o := 0; o < outer; o++ {
		copy(out.F[o*inner:(o+1)*inner], t.F[(o*n+b)*inner:(o*n+b+1)*inner])
	}
	return out
}

func sliceFloats(data []float64, shape []int, ax, b int) []float64 {
	return sliceBatch(graph.NewFloat(shape, data), ax, b).F
}

// perSequence splits a one-batch objective on a fixture into one batch per
// sequence.
func perSequence(t *testing.T, fx *onnxtest.Fixture, whole *hvp.Objective) *hvp.Objective {
	t.Helper()
	wb := whole.Batches[0]
	return perSequenceOf(t, wb.Program.Graph(), fx.Layout, wb.Inputs, whole, wb.Target, wb.Weight, wb.Program)
}

func TestPerSequenceGradientsSumToGradient(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"lstm_packed_bf", "gru_2l_tf", "rnn_bidir_bf"} {
		fx := fixtureByName(t, name)
		whole, theta := fixtureObjective(t, fx, hvp.SquaredError, 11)
		parts := perSequence(t, fx, whole)
		jobs := make([]hvp.Job, len(parts.Batches))
		for i := range jobs {
			jobs[i] = hvp.Job{Batch: i}
		}
		grads := make([][]float64, len(jobs))
		losses := make([]float64, len(jobs))
		if err := parts.Gradients(ctx, theta, jobs, grads, losses); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(theta))
		wantLoss, err := whole.Gradient(ctx, theta, want)
		if err != nil {
			t.Fatal(err)
		}
		sum := make([]float64, len(theta))
		sumLoss := 0.0
		for i, g := range grads {
			sumLoss += losses[i]
			for j, v := range g {
				sum[j] += v
			}
		}
		if e := relErr(sum, want, 1e-12); e > 1e-12 {
			t.Errorf("%s: per-sequence gradients sum to something else than the gradient (rel. error %.2g)", name, e)
		}
		if math.Abs(sumLoss-wantLoss) > 1e-12*wantLoss {
			t.Errorf("%s: per-sequence losses sum to %.15g, loss is %.15g", name, sumLoss, wantLoss)
		}
	}
}

func rhsVectors(P, n int, seed uint64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float64, n)
	for i := range out {
		out[i] = randUnit(r, P)
	}
	return out
}

// TestExactAndCGAgree solves damped systems both ways (1e-8).
func TestExactAndCGAgree(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		fixture string
		c       hvp.Curvature
		rho     float64
	}{
		{"rnn_tanh_1l_bf", hvp.GaussNewton, 0.01},
		{"gru_1l_bf", hvp.GaussNewton, 0.1},
		{"lstm_1l_bf", hvp.GaussNewton, 0.01},
	} {
		fx := fixtureByName(t, tc.fixture)
		o, theta := fixtureObjective(t, fx, hvp.SquaredError, 21)
		rhs := rhsVectors(len(theta), 4, 3)
		xe, re, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Exact, Curvature: tc.c, Damping: tc.rho})
		if err != nil {
			t.Fatal(err)
		}
		// Plain CG pinned to the exact solver's lambda.
		xc, err := cgWithLambda(ctx, o, tc.c, theta, rhs, re.Lambda)
		if err != nil {
			t.Fatal(err)
		}
		for j := range rhs {
			if e := relErr(xe[j], xc[j], 1e-300); e > 1e-8 {
				t.Errorf("%s %s: exact and CG differ by %.2g on rhs %d", tc.fixture, tc.c, e, j)
			}
			if re.Residuals[j] > 1e-9 {
				t.Errorf("%s: exact residual %.2g", tc.fixture, re.Residuals[j])
			}
		}
	}
}

// cgWithLambda runs plain conjugate gradients on C + lambda I with the
// objective's curvature-vector products (an independent check of Solve's
// eigendecomposition path).
func cgWithLambda(ctx context.Context, o *hvp.Objective, c hvp.Curvature, theta []float64, rhs [][]float64, lam float64) ([][]float64, error) {
	P := len(theta)
	out := make([][]float64, len(rhs))
	for j, b := range rhs {
		x := make([]float64, P)
		r := append([]float64(nil), b...)
		p := append([]float64(nil), b...)
		ap := make([]float64, P)
		rr := dot(r, r)
		for it := 0; it < 20*P && math.Sqrt(rr) > 1e-14; it++ {
			if err := o.Apply(ctx, c, theta, p, ap); err != nil {
				return nil, err
			}
			for i := range ap {
				ap[i] += lam * p[i]
			}
			a := rr / dot(p, ap)
			for i := range x {
				x[i] += a * p[i]
				r[i] -= a * ap[i]
			}
			rr2 := dot(r, r)
			for i := range p {
				p[i] = r[i] + rr2/rr*p[i]
			}
			rr = rr2
		}
		out[j] = x
	}
	return out, nil
}

// TestSolveCGConverges: Solve's CG reaches its tolerance on the true
// residual and reports its estimated trace and damping.
func TestSolveCGConverges(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "rnn_tanh_1l_bf")
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 21)
	rhs := rhsVectors(len(theta), 3, 4)
	_, rep, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.CG, Curvature: hvp.GaussNewton, Damping: 0.05, Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	for j, r := range rep.Residuals {
		if r > 1e-11 {
			t.Errorf("rhs %d: residual %.2g after %d iterations", j, r, rep.Iterations[j])
		}
	}
	if rep.TraceErr <= 0 || rep.Lambda <= 0 {
		t.Errorf("report lacks the trace estimate: %+v", rep)
	}
}

// TestLiSSA: with the whole data in every step the recursion is
// deterministic and converges to the exact solution; with per-sequence
// batches sampled at random it agrees with the exact solution to 1e-3; too
// small a scale gives ErrDiverged.
func TestLiSSA(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "rnn_tanh_1l_bf")
	whole, theta := fixtureObjective(t, fx, hvp.SquaredError, 21)
	o := perSequence(t, fx, whole)
	rhs := rhsVectors(len(theta), 2, 5)
	_, re, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Exact, Curvature: hvp.GaussNewton, Damping: 1})
	if err != nil {
		t.Fatal(err)
	}
	all := func(r *rand.Rand, size int) ([]hvp.Job, float64) {
		jobs := make([]hvp.Job, len(o.Batches))
		for i := range jobs {
			jobs[i] = hvp.Job{Batch: i}
		}
		return jobs, 1
	}
	for _, tc := range []struct {
		name   string
		opt    hvp.Options
		within float64
	}{
		{"full batch", hvp.Options{Depth: 4000, Sample: all}, 1e-8},
		{"sampled", hvp.Options{Depth: 20000, Repeats: 2, BatchSize: 2}, 1e-3},
	} {
		opt := tc.opt
		opt.Method, opt.Curvature, opt.Damping, opt.Scale, opt.Seed = hvp.LiSSA, hvp.GaussNewton, 1, 1.2*re.MaxEig, 1
		xl, rl, err := hvp.Solve(ctx, o, theta, rhs, &opt)
		if err != nil {
			t.Fatal(err)
		}
		// The exact solution at LiSSA's own lambda (its trace is estimated).
		xe, err := cgWithLambda(ctx, o, hvp.GaussNewton, theta, rhs, rl.Lambda)
		if err != nil {
			t.Fatal(err)
		}
		for j := range rhs {
			if e := relErr(xl[j], xe[j], 1e-300); e > tc.within {
				t.Errorf("%s, rhs %d: LiSSA differs from exact by %.2g (residual %.2g)", tc.name, j, e, rl.Residuals[j])
			}
		}
	}
	_, _, err = hvp.Solve(ctx, o, theta, rhs, &hvp.Options{
		Method: hvp.LiSSA, Curvature: hvp.GaussNewton, Damping: 0.01,
		Depth: 3000, BatchSize: 2, Scale: 0.1 * re.MaxEig, Seed: 1})
	if !errors.Is(err, hvp.ErrDiverged) {
		t.Errorf("scale below the largest eigenvalue: got %v, want ErrDiverged", err)
	}
}

// TestExactReport: a Hessian with eigenvalues below -lambda is reported
// as indefinite.
func TestExactReport(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "gru_1l_bf")
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 8)
	rhs := rhsVectors(len(theta), 1, 9)
	_, rep, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Exact, Curvature: hvp.Hessian, Damping: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.MinEig < -rep.Lambda) {
		t.Skipf("Hessian happens to be positive definite here (min eig %.3g)", rep.MinEig)
	}
	if rep.NegativeEigs == 0 {
		t.Errorf("indefinite Hessian (min eig %.3g, lambda %.3g) not reported", rep.MinEig, rep.Lambda)
	}
	// The count, from an eigendecomposition of the dense Hessian.
	h, err := o.Dense(ctx, hvp.Hessian, theta)
	if err != nil {
		t.Fatal(err)
	}
	var eig mat.EigenSym
	if !eig.Factorize(h, false) {
		t.Fatal("eigendecomposition failed")
	}
	neg := 0
	for _, v := range eig.Values(nil) {
		if v < -rep.Lambda {
			neg++
		}
	}
	if neg != rep.NegativeEigs {
		t.Errorf("%d eigenvalues below -lambda reported, %d in the dense Hessian", rep.NegativeEigs, neg)
	}
}

// TestMINRESIndefinite: on an indefinite damped Hessian the CG method
// (MINRES for the Hessian) agrees with the exact solution to 1e-8.
func TestMINRESIndefinite(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "gru_1l_bf")
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 8)
	rhs := rhsVectors(len(theta), 3, 10)
	_, re, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Exact, Curvature: hvp.Hessian, Damping: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	if !(re.MinEig < -re.Lambda) {
		t.Fatalf("the damped Hessian is not indefinite here (min eig %.3g, lambda %.3g)", re.MinEig, re.Lambda)
	}
	// Give CG the exact trace through its estimate's rho: pin lambda by
	// solving with the exact solver's lambda in the plain MINRES check.
	xm, rm, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.CG, Curvature: hvp.Hessian, Damping: 1e-3, TraceSamples: 5000, Tol: 1e-13})
	if err != nil {
		t.Fatal(err)
	}
	xe2, _, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Exact, Curvature: hvp.Hessian, Damping: rm.Lambda / re.Lambda * 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	for j := range rhs {
		if e := relErr(xm[j], xe2[j], 1e-300); e > 1e-8 {
			t.Errorf("rhs %d: MINRES differs from exact by %.2g (residual %.2g, %d iterations)", j, e, rm.Residuals[j], rm.Iterations[j])
		}
	}
}

// TestDefaultDampingFor checks the Gauss-Newton rule against the numbers
// its doc gives: 1e-4 at a stationary point (ratio 0), linear in the
// ratio up to 1e-3 at ratio 1 (the influence benchmark's stationary n = 100
// RNN, ratio 0.528, gets 5.75e-4), 1e-3 beyond and when the ratio is
// unknown; the Hessian's 1e-6 always.
func TestDefaultDampingFor(t *testing.T) {
	for _, c := range []struct{ ratio, want float64 }{
		{0, 1e-4}, {0.528, 1e-4 + 0.528*9e-4}, {1, 1e-3}, {10.6, 1e-3}, {250, 1e-3},
		{math.Inf(1), 1e-3}, {math.NaN(), 1e-3},
	} {
		if got := hvp.DefaultDampingFor(hvp.GaussNewton, c.ratio); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("ratio %g: rho %g, want %g", c.ratio, got, c.want)
		}
	}
	if got := hvp.DefaultDampingFor(hvp.Hessian, 0.5); got != hvp.DefaultDamping {
		t.Errorf("hessian: rho %g, want %g", got, hvp.DefaultDamping)
	}
}
