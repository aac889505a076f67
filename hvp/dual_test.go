package hvp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// dualData is n sequences of T = 10 steps for the paper's RNN (481
// parameters), in batches of at most 15 sequences (examples on axis 0
// when axes is set), with weights mostly 1, some 0 and some 2. For
// squared error the targets come from the paper's AR process; for binary
// cross-entropy the model's output goes through a sigmoid, the inputs
// are small (outputs well inside (0, 1)) and the targets are 0 or 1.
func dualData(t *testing.T, n int, loss hvp.Loss, ridge float64, axes bool) (*hvp.Objective, []float64) {
	t.Helper()
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if loss == hvp.BinaryCrossEntropy {
		g = withSigmoid(t, g)
	}
	const T, chunk = 10, 15
	r := rand.New(rand.NewPCG(uint64(n), 3))
	o := &hvp.Objective{Loss: loss, Ridge: ridge}
	progs := map[int]*graph.Program{}
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		x := graph.NewFloat([]int{m, T, 1}, nil)
		y := make([]float64, m*T)
		w := make([]float64, m*T)
		arSequences(r, T, x.F, y)
		for i := range w {
			switch u := r.Float64(); {
			case u < 0.15:
				w[i] = 0
			case u < 0.3:
				w[i] = 2
			default:
				w[i] = 1
			}
			if loss == hvp.BinaryCrossEntropy {
				x.F[i] *= 0.1
				y[i] = float64(r.IntN(2))
			}
		}
		p, ok := progs[m]
		if !ok {
			if p, err = g.Compile([]*graph.Tensor{x}); err != nil {
				t.Fatal(err)
			}
			progs[m] = p
		}
		b := hvp.Batch{Program: p, Inputs: []*graph.Tensor{x}, Target: y, Weight: w}
		if axes {
			b.ExampleAxes = []int{0}
		}
		o.Batches = append(o.Batches, b)
	}
	return o, g.Theta()
}

// TestDualMatchesExact: the dual solve equals the exact dense
// Gauss-Newton solve (Method Exact, same damping) to 1e-9, and its report
// has the exact path's trace, lambda and extreme eigenvalues, for both
// losses, with and without a ridge, with fewer and with more loss terms
// than parameters. The right-hand sides are random (with a component
// outside the span of the Jacobian's rows when N < P) and the gradient
// (inside it), and the residuals |(C + lambda I) x - b| / |b| against the
// dense C are at rounding level for the condition number.
func TestDualMatchesExact(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		loss  hvp.Loss
		ridge float64
		n     int
	}{
		{hvp.SquaredError, 0, 20},
		{hvp.SquaredError, 0.5, 20},
		{hvp.SquaredError, 0, 80},
		{hvp.SquaredError, 0.5, 80},
		{hvp.BinaryCrossEntropy, 0, 20},
		{hvp.BinaryCrossEntropy, 0.5, 20},
		{hvp.BinaryCrossEntropy, 0, 80},
		{hvp.BinaryCrossEntropy, 0.5, 80},
	} {
		name := fmt.Sprintf("%s/ridge=%g/n=%d", tc.loss, tc.ridge, tc.n)
		t.Run(name, func(t *testing.T) {
			o, theta := dualData(t, tc.n, tc.loss, tc.ridge, true)
			P, N := len(theta), o.NumTerms()
			if (tc.n == 20) != (N < P) {
				t.Fatalf("N = %d, P = %d: the case does not test what it says", N, P)
			}
			rhs := rhsVectors(P, 4, 5)
			grad := make([]float64, P)
			if _, err := o.Gradient(ctx, theta, grad); err != nil {
				t.Fatal(err)
			}
			rhs = append(rhs, grad)
			want, wrep, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Exact})
			if err != nil {
				t.Fatal(err)
			}
			got, rep, err := hvp.Solve(ctx, o, theta, rhs, &hvp.Options{Method: hvp.Dual})
			if err != nil {
				t.Fatal(err)
			}
			c, err := o.Dense(ctx, hvp.GaussNewton, theta)
			if err != nil {
				t.Fatal(err)
			}
			for j := range rhs {
				res := make([]float64, P)
				for i := range res {
					res[i] = rep.Lambda*got[j][i] - rhs[j][i]
					for k := range res {
						res[i] += c.At(i, k) * got[j][k]
					}
				}
				if e := relErr(got[j], want[j], 1e-300); e > 1e-9 {
					t.Errorf("rhs %d: dual and exact solutions differ by %.3g (relative)", j, e)
				}
				// Backward error at rounding level, against the dense
				// matrix and as reported: 100 eps times the condition
				// number of C + lambda I (the exact path's residuals are
				// about ten times smaller).
				cond := (wrep.MaxEig + wrep.Lambda) / (wrep.MinEig + wrep.Lambda)
				tol := 2e-14 * cond
				if r := norm(res) / norm(rhs[j]); !(r < tol) || !(rep.Residuals[j] < tol) {
					t.Errorf("rhs %d: relative residual %.3g against the dense matrix, %.3g reported; want below %.3g (exact path: %.3g)", j, r, rep.Residuals[j], tol, wrep.Residuals[j])
				}
			}
			for _, c := range []struct {
				what      string
				got, want float64
				tol       float64
			}{
				{"trace", rep.Trace, wrep.Trace, 1e-12 * wrep.Trace},
				{"lambda", rep.Lambda, wrep.Lambda, 1e-12 * wrep.Lambda},
				{"rho", rep.Rho, wrep.Rho, 0},
				{"largest eigenvalue", rep.MaxEig, wrep.MaxEig, 1e-10 * wrep.MaxEig},
				{"smallest eigenvalue", rep.MinEig, wrep.MinEig, 1e-10*wrep.MaxEig + 1e-9*math.Abs(wrep.MinEig)},
			} {
				if math.Abs(c.got-c.want) > c.tol {
					t.Errorf("%s: dual %.15g, exact %.15g", c.what, c.got, c.want)
				}
			}
			if rep.Method != hvp.Dual || rep.NegativeEigs != wrep.NegativeEigs {
				t.Errorf("report: method %s, %d negative eigenvalues; exact %d", rep.Method, rep.NegativeEigs, wrep.NegativeEigs)
			}
		})
	}
}

// TestDualRowsBothWays: the Jacobian rows from batched passes split by
// example (Batch.ExampleAxes) and from one backward pass per term give the
// same solutions; the zero weights make the examples' term counts
// unequal, so some passes have examples without a term.
func TestDualRowsBothWays(t *testing.T) {
	ctx := context.Background()
	batched, theta := dualData(t, 30, hvp.SquaredError, 0, true)
	perTerm, _ := dualData(t, 30, hvp.SquaredError, 0, false)
	rhs := rhsVectors(len(theta), 3, 6)
	opt := &hvp.Options{Method: hvp.Dual, Damping: 1e-2}
	var passes [2]int
	x := make([][][]float64, 2)
	for i, o := range []*hvp.Objective{batched, perTerm} {
		opt.Progress = func(_, total int) { passes[i] = total }
		f, _, err := hvp.Factorize(ctx, o, theta, opt)
		if err != nil {
			t.Fatal(err)
		}
		x[i] = make([][]float64, len(rhs))
		if err := f.SolveAll(ctx, x[i], rhs); err != nil {
			t.Fatal(err)
		}
	}
	for j := range rhs {
		if e := relErr(x[0][j], x[1][j], 1e-300); e > 1e-12 {
			t.Errorf("rhs %d: batched and per-term rows give solutions %.3g apart", j, e)
		}
	}
	if N := perTerm.NumTerms(); passes[1] != N || passes[0] > 2*10 {
		t.Errorf("%d batched passes (want at most 10 per batch), %d per-term passes (want N = %d)", passes[0], passes[1], N)
	}
}

// TestDualRecorded: SolveRecorded fills the report's residuals, SolveAll
// overwrites allocated slots and solves in place, and bad shapes are
// errors.
func TestDualRecorded(t *testing.T) {
	ctx := context.Background()
	o, theta := dualData(t, 10, hvp.SquaredError, 0.1, true)
	f, rep, err := hvp.Factorize(ctx, o, theta, &hvp.Options{Method: hvp.Dual})
	if err != nil {
		t.Fatal(err)
	}
	if f.Dim() != len(theta) {
		t.Errorf("Dim %d, want %d", f.Dim(), len(theta))
	}
	rhs := rhsVectors(len(theta), 70, 7) // more than one chunk
	x := make([][]float64, len(rhs))
	x[3] = make([]float64, len(theta))
	if err := f.SolveRecorded(ctx, x, rhs); err != nil {
		t.Fatal(err)
	}
	if len(rep.Residuals) != len(rhs) {
		t.Fatalf("%d residuals for %d right-hand sides", len(rep.Residuals), len(rhs))
	}
	for j, r := range rep.Residuals {
		if !(r < 1e-10) {
			t.Errorf("rhs %d: relative residual %.3g", j, r)
		}
	}
	y := make([][]float64, len(rhs))
	if err := f.SolveAll(ctx, y, rhs); err != nil {
		t.Fatal(err)
	}
	if e := relErr(x[3], y[3], 1e-300); e > 0 {
		t.Errorf("an allocated slot got another solution (%.3g apart)", e)
	}
	in := make([][]float64, len(rhs)) // solved in place
	for j, b := range rhs {
		in[j] = append([]float64(nil), b...)
	}
	if err := f.SolveAll(ctx, in, in); err != nil {
		t.Fatal(err)
	}
	for j := range in {
		if e := relErr(in[j], y[j], 1e-300); e > 0 {
			t.Fatalf("rhs %d: solved in place, %.3g from the solution", j, e)
		}
	}
	if err := f.SolveAll(ctx, make([][]float64, 1), rhs); err == nil {
		t.Error("SolveAll accepted 70 right-hand sides for 1 slot")
	}
	if err := f.SolveAll(ctx, make([][]float64, 1), [][]float64{make([]float64, 3)}); err == nil {
		t.Error("SolveAll accepted a right-hand side of length 3")
	}
}

// TestDualRefuses: the dual method is for the Gauss-Newton matrix with
// some damping or ridge.
func TestDualRefuses(t *testing.T) {
	ctx := context.Background()
	o, theta := dualData(t, 5, hvp.SquaredError, 0, true)
	if _, _, err := hvp.Factorize(ctx, o, theta, &hvp.Options{Method: hvp.Dual, Curvature: hvp.Hessian}); err == nil {
		t.Error("the dual method accepted the Hessian")
	}
	_, _, err := hvp.Factorize(ctx, o, theta, &hvp.Options{Method: hvp.Dual, Damping: -1})
	if !errors.Is(err, hvp.ErrIndefinite) {
		t.Errorf("no damping and no ridge: error %v, want ErrIndefinite", err)
	}
}

// TestDualFits: the rule for choosing the dual method.
func TestDualFits(t *testing.T) {
	for _, tc := range []struct {
		N, P int
		max  int64
		ok   bool
		why  hvp.DualReason
	}{
		{1000, 4353, 0, true, hvp.DualFewerTerms},
		{4353, 4353, 0, true, hvp.DualFewerTerms},
		{4354, 4353, 0, false, hvp.DualMoreTerms},
		{1000, 4353, hvp.DualBytes(1000, 4353), true, hvp.DualFewerTerms},
		{1000, 4353, hvp.DualBytes(1000, 4353) - 1, false, hvp.DualTooLarge},
		{100000, 1 << 20, 0, false, hvp.DualTooLarge},
	} {
		ok, why := hvp.DualFits(tc.N, tc.P, tc.max)
		if ok != tc.ok || why != tc.why {
			t.Errorf("DualFits(%d, %d, %d) = %v, %s; want %v, %s", tc.N, tc.P, tc.max, ok, why, tc.ok, tc.why)
		}
	}
	if got, want := hvp.DualBytes(1000, 4353), int64(8*(1000*4353+3*1000*1000)); got != want {
		t.Errorf("DualBytes = %d, want %d", got, want)
	}
}

// BenchmarkDualRNN64 is Factorize with Method Dual and the solve of 100
// right-hand sides (the per-sequence gradients) on the 4,353-parameter
// RNN of benchmarks/scale with 100 sequences of 10 steps (N = 1,000 loss
// terms), in one batch and in batches of 25: the curvature and solve
// phases of an audit whose exact dense path takes minutes.
func BenchmarkDualRNN64(b *testing.B) {
	ctx := context.Background()
	g := scaleModel(b, "rnn64")
	theta := g.Theta()
	for _, chunk := range []int{100, 25} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			o := processData(b, g, 100, chunk, 1)
			jobs := make([]hvp.Job, len(o.Batches))
			out := make([][][]float64, len(jobs))
			for i := range jobs {
				jobs[i] = hvp.Job{Batch: i}
				out[i] = make([][]float64, chunk)
			}
			if err := o.PerExampleGradients(ctx, theta, jobs, out, nil); err != nil {
				b.Fatal(err)
			}
			var rhs [][]float64
			for _, o := range out {
				rhs = append(rhs, o...)
			}
			x := make([][]float64, len(rhs))
			for b.Loop() {
				f, _, err := hvp.Factorize(ctx, o, theta, &hvp.Options{Method: hvp.Dual})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.SolveRecorded(ctx, x, rhs); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(o.NumTerms()), "terms")
			}
		})
	}
}
