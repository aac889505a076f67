package audit

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// newtonRun runs the audit's estimation phases (block gradients, the
// solve and the Newton correction) of p and returns their output.
func newtonRun(t *testing.T, p *problem) *influence {
	t.Helper()
	grads, sg := blockGrads(t, p, false)
	inf, err := estimate(t.Context(), p, grads, sg, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// ownObjective is the loss of training sequence i alone (no ridge): its
// Gauss-Newton matrix is C_b and its gradient g_b.
func (r *problem) ownObjective(i int) *hvp.Objective {
	obj := r.objective(r.groups)
	obj.Ridge = 0
	for gi, gr := range r.groups {
		w := make([]float64, len(gr.weight))
		B := len(gr.seqs)
		for b, s := range gr.seqs {
			if s != i {
				continue
			}
			for _, f := range r.io.Forecasts(gr.T) {
				q := r.io.Index(B, gr.T, b, f.T, f.H)
				w[q] = gr.weight[q]
			}
		}
		obj.Batches[gi].Weight = w
	}
	return obj
}

// partOutputs is the output of training sequence i's own part at theta.
func (r *problem) partOutputs(t *testing.T, i int, theta []float64) ([]float64, *group) {
	t.Helper()
	for _, gr := range r.parts {
		if gr.seqs[0] == i {
			outs, err := gr.prog.NewState().Forward(theta, gr.in)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Clone(outs[0].F), gr
		}
	}
	t.Fatalf("no part for sequence %d", i)
	return nil, nil
}

// TestNewtonAgainstDense checks the Newton estimator on a GRU against
// brute force: its step equals (C + lambda I - C_b)^-1 g_b with C and C_b
// formed densely (hvp.Objective.Dense on the full and on the block's own
// objective) and solved by LU; its own-block residuals equal y - f -
// J_b delta_b with J_b delta_b a central difference of the outputs along
// delta_b; its leverage (diagonal and largest eigenvalue) equals that of
// Lambda^1/2 J (C + lambda I)^-1 J^T Lambda^1/2 with J from central
// differences along every parameter. With the ridge and a damping large
// enough to make the test well conditioned.
func TestNewtonAgainstDense(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 14, 0, 4, 6, 11)
	r := newProblem(t, g, train, Options{Layout: graph.BatchFirst, Solver: Exact, Damping: 0.01, Ridge: 0.5})
	inf := newtonRun(t, r)
	ctx := t.Context()
	P := len(r.theta)
	whole := r.objective(r.groups)
	C, err := whole.Dense(ctx, hvp.GaussNewton, r.theta)
	if err != nil {
		t.Fatal(err)
	}
	lam := inf.diag.Lambda
	if !(lam > 0) {
		t.Fatalf("lambda %g", lam)
	}
	var A mat.Dense // (C + lambda I)^-1
	Cl := mat.NewDense(P, P, nil)
	for i := 0; i < P; i++ {
		for j := 0; j < P; j++ {
			Cl.Set(i, j, C.At(i, j))
		}
		Cl.Set(i, i, Cl.At(i, i)+lam)
	}
	if err := A.Inverse(Cl); err != nil {
		t.Fatal(err)
	}
	maxLev := 0.0
	for k, b := range r.scheme.Blocks[:5] {
		i := b.Seq
		own := r.ownObjective(i)
		Cb, err := own.Dense(ctx, hvp.GaussNewton, r.theta)
		if err != nil {
			t.Fatal(err)
		}
		gb := make([]float64, P)
		if _, err := own.Gradient(ctx, r.theta, gb); err != nil {
			t.Fatal(err)
		}
		M := mat.NewDense(P, P, nil)
		M.Sub(Cl, Cb)
		var want mat.VecDense
		if err := want.SolveVec(M, mat.NewVecDense(P, gb)); err != nil {
			t.Fatal(err)
		}
		got := inf.delta[k]
		diff := 0.0
		for j := range got {
			diff = math.Max(diff, math.Abs(got[j]-want.AtVec(j)))
		}
		if scale := mat.Norm(&want, math.Inf(1)); diff > 1e-7*scale {
			t.Errorf("block %d: Woodbury step differs from the dense solve by %.3g (largest entry %.3g)", k, diff, scale)
		}

		// Own residuals: y - f - J delta, J delta by central differences.
		const h = 1e-6
		plus := slices.Clone(r.theta)
		minus := slices.Clone(r.theta)
		for j := range plus {
			plus[j] += h * got[j]
			minus[j] -= h * got[j]
		}
		fp, gr := r.partOutputs(t, i, plus)
		fm, _ := r.partOutputs(t, i, minus)
		f0, _ := r.partOutputs(t, i, r.theta)
		ob := inf.own[k]
		if ob == nil || len(ob.terms) == 0 {
			t.Fatalf("block %d: no own-block residuals", k)
		}
		for a, term := range ob.terms {
			q := r.io.Index(1, gr.T, 0, term.f.T, term.f.H)
			jd := (fp[q] - fm[q]) / (2 * h)
			want := math.Abs(gr.target[q] - f0[q] - jd)
			if math.Abs(ob.res[a]-want) > 1e-6*(1+want) {
				t.Errorf("block %d term %d: own residual %.10g, y - f - J delta = %.10g", k, a, ob.res[a], want)
			}
		}

		// Leverage: J by central differences along every parameter.
		m := len(ob.terms)
		J := mat.NewDense(m, P, nil)
		for j := 0; j < P; j++ {
			plus, minus := slices.Clone(r.theta), slices.Clone(r.theta)
			plus[j] += 1e-6
			minus[j] -= 1e-6
			fp, _ := r.partOutputs(t, i, plus)
			fm, _ := r.partOutputs(t, i, minus)
			for a, term := range ob.terms {
				q := r.io.Index(1, gr.T, 0, term.f.T, term.f.H)
				J.Set(a, j, (fp[q]-fm[q])/2e-6)
			}
		}
		var JA, S mat.Dense
		JA.Mul(J, &A)
		S.Mul(&JA, J.T())
		sym := mat.NewSymDense(m, nil)
		for a := 0; a < m; a++ {
			for c := a; c < m; c++ {
				// Squared error: Lambda = 2 w (w = 1).
				sym.SetSym(a, c, 2*(S.At(a, c)+S.At(c, a))/2)
			}
		}
		for a := 0; a < m; a++ {
			if d := sym.At(a, a); math.Abs(inf.lev[k][a]-d) > 1e-6 {
				t.Errorf("block %d term %d: leverage %.8g, brute force %.8g", k, a, inf.lev[k][a], d)
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(sym, false) {
			t.Fatal("eigendecomposition failed")
		}
		vals := eig.Values(nil)
		if math.Abs(vals[m-1]-inf.levMax[k]) > 1e-6 {
			t.Errorf("block %d: largest leverage eigenvalue %.8g, brute force %.8g", k, inf.levMax[k], vals[m-1])
		}
		if vals[0] < -1e-9 || vals[m-1] >= 1 {
			t.Errorf("block %d: leverage eigenvalues %v outside [0, 1)", k, vals)
		}
		maxLev = math.Max(maxLev, vals[m-1])
	}
	if maxLev < 0.05 {
		t.Errorf("largest leverage %.3g: the test does not exercise the correction", maxLev)
	}
}

// TestNewtonUnboundedBlock: a block that alone determines some
// parameters (the RNN's input weights, the only parameters audited, with
// every other training sequence's inputs zero) is interpolated by the
// model: its leverage is within leverageLimit of 1, its own residuals are
// +Inf and counted, a warning says so, and every other number stays
// finite.
func TestNewtonUnboundedBlock(t *testing.T) {
	g := fixtureModel(t, "rnn_tanh_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 30, 0, 6, 6, 5)
	for _, s := range train.Seqs[1:] {
		for _, x := range s.X {
			clear(x)
		}
	}
	test := randomData(t, "test", g, graph.BatchFirst, 6, 0, 6, 6, 6)
	res, err := Run(r0(t), g, train, test, &Options{Layout: graph.BatchFirst, Solver: Exact, Params: "onnx::RNN_40", Damping: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diag
	if d.UnboundedBlocks != 1 {
		t.Errorf("%d unbounded blocks, want 1 (sequence s00)", d.UnboundedBlocks)
	}
	found := false
	for _, w := range d.Warnings {
		if w.Code == UnboundedBlocks && w.Count == 1 && w.Figure > 1-leverageLimit && w.Figure < 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no unbounded-blocks warning for one block: %+v", d.Warnings)
	}
	if len(d.UnboundedLabels) != 1 || !strings.Contains(d.UnboundedLabels[0], "s00") {
		t.Errorf("unbounded blocks %q, want sequence s00", d.UnboundedLabels)
	}
	for _, v := range d.InfluenceNorms {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("influence norm %v", v)
		}
	}
	for _, v := range d.LeveragePerStep {
		if math.IsNaN(v) || v < 0 || v >= 1 {
			t.Errorf("leverage per step %v", d.LeveragePerStep)
		}
	}
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			if math.IsNaN(st.Lower) || math.IsNaN(st.Upper) || math.IsInf(st.Lower, 0) || math.IsInf(st.Upper, 0) {
				t.Fatalf("sequence %s step %d: interval [%v, %v]: one unbounded block of 30 must not reach the quantile", s.ID, st.Row, st.Lower, st.Upper)
			}
		}
	}
	if m := res.Summary.MeanLength; math.IsNaN(m) || math.IsInf(m, 0) {
		t.Errorf("mean length %v", m)
	}
}

// TestGaussNewtonDefaultDefinite: the default curvature is the
// Gauss-Newton matrix, positive semi-definite, so that the damped system
// never has negative eigenvalues, where the Hessian of the same model
// does.
func TestGaussNewtonDefaultDefinite(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 14, 0, 4, 6, 11)
	gn, err := Run(r0(t), g, train, nil, &Options{Layout: graph.BatchFirst, Solver: Exact})
	if err != nil {
		t.Fatal(err)
	}
	if gn.Setting.Curvature != "gauss-newton" || gn.Setting.Estimator != "newton" || gn.Setting.Damping != hvp.DefaultGaussNewtonDamping || hvp.DefaultDampingFor(hvp.GaussNewton, 0) != hvp.DefaultStationaryGaussNewtonDamping {
		t.Errorf("defaults: %s, %s, damping %g", gn.Setting.Curvature, gn.Setting.Estimator, gn.Setting.Damping)
	}
	if gn.Diag.NegativeEigenvalues != 0 || gn.Diag.MinEig < -1e-9*gn.Diag.MaxEig {
		t.Errorf("Gauss-Newton: %d negative eigenvalues, smallest %.3g", gn.Diag.NegativeEigenvalues, gn.Diag.MinEig)
	}
	h, err := Run(r0(t), g, train, nil, &Options{Layout: graph.BatchFirst, Solver: Exact, Curvature: hvp.Hessian})
	if err != nil {
		t.Fatal(err)
	}
	if h.Diag.NegativeEigenvalues == 0 {
		t.Skipf("the Hessian is positive definite here (smallest eigenvalue %.3g)", h.Diag.MinEig)
	}
	found := false
	for _, w := range h.Diag.Warnings {
		found = found || (w.Code == Indefinite && w.Count == h.Diag.NegativeEigenvalues)
	}
	if !found {
		t.Errorf("indefinite Hessian (%d negative eigenvalues) without a warning: %+v", h.Diag.NegativeEigenvalues, h.Diag.Warnings)
	}
}

func r0(t *testing.T) context.Context { return t.Context() }
