package hvp_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// TestOutputJacobianRows: a job with Outputs set and a weight keeping one
// output element gives that element's gradient d f_e / d theta; checked
// against central differences of the forward pass along random directions.
func TestOutputJacobianRows(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "gru_1l_bf")
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 13)
	b := o.Batches[0]
	P := len(theta)
	outAt := func(th []float64) []float64 { return batchOutputs(t, b, th) }
	r := rand.New(rand.NewPCG(7, 7))
	dirs := [][]float64{randUnit(r, P), randUnit(r, P)}
	const h = 1e-5
	var jv [][]float64
	for _, d := range dirs {
		p, m := outAt(axpy(h, d, theta)), outAt(axpy(-h, d, theta))
		for i := range p {
			p[i] = (p[i] - m[i]) / (2 * h)
		}
		jv = append(jv, p)
	}
	n := len(b.Weight)
	for _, e := range []int{0, n / 3, n - 1} {
		w := make([]float64, n)
		w[e] = 1
		row := make([][]float64, 1)
		if err := o.Gradients(ctx, theta, []hvp.Job{{Batch: 0, Weight: w, Outputs: true}}, row, nil); err != nil {
			t.Fatal(err)
		}
		for k, d := range dirs {
			if got, want := dot(row[0], d), jv[k][e]; math.Abs(got-want) > 1e-7*math.Max(1, math.Abs(want)) {
				t.Errorf("element %d, direction %d: J_e·v = %.10g, central difference %.10g", e, k, got, want)
			}
		}
	}
}

// TestFactorSolveAll: the factor of each method applies the same inverse
// as Solve, and the exact factor's solution satisfies (C + lambda I) x = b
// with C formed densely (Objective.Dense).
func TestFactorSolveAll(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "rnn_tanh_1l_bf")
	o, theta := fixtureObjective(t, fx, hvp.SquaredError, 21)
	rhs := rhsVectors(len(theta), 3, 4)
	c, err := o.Dense(ctx, hvp.GaussNewton, theta)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []hvp.Method{hvp.Exact, hvp.CG} {
		opt := &hvp.Options{Method: m, Damping: 0.01, Tol: 1e-12}
		want, _, err := hvp.Solve(ctx, o, theta, rhs, opt)
		if err != nil {
			t.Fatal(err)
		}
		f, rep, err := hvp.Factorize(ctx, o, theta, opt)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Curvature != hvp.GaussNewton || rep.Rho != 0.01 {
			t.Errorf("%s: report %+v: want the Gauss-Newton curvature by default", m, rep)
		}
		if f.Dim() != len(theta) {
			t.Errorf("%s: Dim %d, want %d", m, f.Dim(), len(theta))
		}
		x := make([][]float64, len(rhs))
		x[1] = make([]float64, len(theta)) // an allocated slot is overwritten
		if err := f.SolveAll(ctx, x, rhs); err != nil {
			t.Fatal(err)
		}
		for j := range rhs {
			if e := relErr(x[j], want[j], 1e-300); e > 1e-12 {
				t.Errorf("%s rhs %d: SolveAll differs from Solve by %.2g", m, j, e)
			}
			// (C + lambda I) x - b with the dense C.
			res := 0.0
			for i := range theta {
				s := rep.Lambda * x[j][i]
				for k := range theta {
					s += c.At(i, k) * x[j][k]
				}
				res += (s - rhs[j][i]) * (s - rhs[j][i])
			}
			if math.Sqrt(res) > 1e-8*norm(rhs[j]) {
				t.Errorf("%s rhs %d: residual %.3g against the dense curvature", m, j, math.Sqrt(res))
			}
		}
		if err := f.SolveAll(ctx, make([][]float64, 1), rhs); err == nil {
			t.Errorf("%s: SolveAll accepted 3 right-hand sides for 1 slot", m)
		}
	}
}
