package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/table"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// linearReference computes, independently of the low-rank path, the
// jackknife+ limits that the LowRank solver at full rank must give: the
// exact path's steps (dense eigendecomposition, Exact) and, for the
// Newton estimator, its own residuals; the linearised predictions f(x) +
// J_x delta_b and (infinitesimal estimator) own residuals |y - f - J_b
// delta_b| by central differences of forward passes along delta_b; or
// (inSample) the in-sample own residuals |y - f|.
func linearReference(t *testing.T, g *graph.Graph, train, test *blocks.Dataset, opt Options, inSample bool) (lo, up []float64) {
	t.Helper()
	ctx := context.Background()
	opt.Solver = Exact
	o, err := opt.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 2
	p, err := prepare(o, g, train, test)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := newSeqGrads(p, false)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := blockGradients(ctx, p, sg)
	if err != nil {
		t.Fatal(err)
	}
	inf, err := estimate(ctx, p, grads, sg, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if inf.estimator != opt.Estimator {
		t.Fatalf("the exact path used the %s estimator, want %s", inf.estimator, opt.Estimator)
	}
	// jd returns (f(theta + e delta) - f(theta - e delta)) / 2e on group gr.
	jd := func(gr *group, delta []float64) []float64 {
		e := 1e-4 / math.Max(num.Norm(delta), 1e-12)
		th := make([]float64, len(delta))
		out := make([][]float64, 2)
		for s, sign := range []float64{1, -1} {
			for j := range th {
				th[j] = p.theta[j] + sign*e*delta[j]
			}
			o, err := gr.prog.NewState().Forward(th, gr.in)
			if err != nil {
				t.Fatal(err)
			}
			out[s] = append([]float64(nil), o[0].F...)
		}
		for j := range out[0] {
			out[0][j] = (out[0][j] - out[1][j]) / (2 * e)
		}
		return out[0]
	}
	terms, err := p.ownTerms()
	if err != nil {
		t.Fatal(err)
	}
	partOf := make([]int, p.train.Len())
	for pi, gr := range p.parts {
		partOf[gr.seqs[0]] = pi
	}
	entries := map[forecast][]interval.Residual{}
	preds := make(predMatrix, len(p.scheme.Blocks))
	for k, b := range p.scheme.Blocks {
		var own []float64
		if !inSample && opt.Estimator == Infinitesimal {
			own = jd(p.parts[partOf[b.Seq]], inf.delta[k])
		}
		for a, tm := range terms[b.Seq] {
			var r float64
			switch {
			case inSample:
				r = math.Abs(tm.y - tm.fx)
			case opt.Estimator == Newton:
				r = inf.own[k].res[a]
			default:
				r = math.Abs(tm.y - tm.fx - own[p.io.Index(1, p.parts[partOf[b.Seq]].T, 0, tm.f.T, tm.f.H)])
			}
			entries[tm.f] = append(entries[tm.f], interval.Residual{Blk: k, Seq: b.Seq, R: r})
		}
		preds[k] = make([]float64, len(ev.test))
		for gi, gr := range p.evalGroups {
			d := jd(gr, inf.delta[k])
			for j, pt := range ev.test {
				if pt.group == gi {
					preds[k][j] = pt.pred + d[pt.pos]
				}
			}
		}
	}
	l := jackknifeLimits(ctx, 2, o.Alpha, ev.test, 0, preds, byPosition(entries), false, nil)
	return l.lo, l.up
}

// flatSteps lists a result's intervals in the order of the evaluation
// points (by sequence, row, horizon).
func flatSteps(res *Result) []StepResult {
	var out []StepResult
	for _, s := range res.Sequences {
		out = append(out, s.Steps...)
	}
	return out
}

// TestLowRankFullRank: the LowRank solver at rank P is exact in its
// curvature and its shifts, so its intervals are those of the linearised
// leave-one-block-out models built from the exact path's steps
// (linearReference), to 1e-6 of the width: for the infinitesimal and the
// Newton estimators with the per-block rule, and for the in-sample rule.
//
// lstm_last_bf forecasts once per sequence, at its last row: with
// sequences of 4 to 6 rows a test point pairs only with the training
// sequences of its own length (the forecast (row, horizon), as on the
// exact path), which the block table's forecast slots must reproduce.
func TestLowRankFullRank(t *testing.T) {
	gru := fixtureModel(t, "gru_1l_bf")
	last := fixtureModel(t, "lstm_last_bf")
	for _, tc := range []struct {
		name     string
		g        *graph.Graph
		n        int
		est      Estimator
		rule     float64
		inSample bool
	}{
		{"infinitesimal per-block", gru, 14, Infinitesimal, -1, false},
		{"newton per-block", gru, 14, Newton, -1, false},
		{"infinitesimal in-sample", gru, 14, Infinitesimal, math.Inf(1), true},
		{"many-to-one newton per-block", last, 75, Newton, -1, false},
	} {
		g := tc.g
		train := randomData(t, "train", g, graph.BatchFirst, tc.n, 0, 4, 6, 11)
		test := randomData(t, "test", g, graph.BatchFirst, 5, 0, 4, 7, 12)
		P := g.NumParams()
		t.Run(tc.name, func(t *testing.T) {
			base := Options{Layout: graph.BatchFirst, Curvature: hvp.GaussNewton, Damping: 0.05, Estimator: tc.est, Workers: 2}
			rlo, rup := linearReference(t, g, train, test, base, tc.inSample)
			opt := base
			opt.Solver, opt.Rank, opt.leverageRule = LowRank, P, tc.rule
			res, err := Run(context.Background(), g, train, test, &opt)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Diag
			if res.Setting.Solver != string(LowRank) || d.Rank != P || d.CurvatureSequences != train.Len() || !(d.LeverageEstimate > 0) {
				t.Fatalf("setting %+v, rank %d, %d curvature sequences, leverage %g", res.Setting, d.Rank, d.CurvatureSequences, d.LeverageEstimate)
			}
			if want := map[bool]string{true: "in-sample", false: "per-block"}[tc.inSample]; d.LeverageRule != want {
				t.Fatalf("leverage rule %q, want %q", d.LeverageRule, want)
			}
			steps := flatSteps(res)
			if len(steps) != len(rlo) {
				t.Fatalf("%d intervals, the reference %d", len(steps), len(rlo))
			}
			n := 0
			for i, st := range steps {
				w := rup[i] - rlo[i]
				if math.IsInf(w, 0) || math.IsNaN(w) {
					if st.Lower != rlo[i] || st.Upper != rup[i] {
						t.Fatalf("point %d: [%g, %g], reference [%g, %g]", i, st.Lower, st.Upper, rlo[i], rup[i])
					}
					continue
				}
				n++
				if math.Abs(st.Lower-rlo[i]) > 1e-6*w || math.Abs(st.Upper-rup[i]) > 1e-6*w {
					t.Fatalf("point %d: [%.12g, %.12g], reference [%.12g, %.12g]", i, st.Lower, st.Upper, rlo[i], rup[i])
				}
			}
			if n == 0 {
				t.Fatal("no finite intervals compared")
			}
			if tc.est == Newton && len(d.LeveragePerStep) == 0 {
				t.Error("no leverage per step with the per-block rule")
			}
		})
	}
}

// TestLowRankRetrain: re-training needs the per-block steps, which the
// low-rank path does not keep; the error names both options.
func TestLowRankRetrain(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 8, 0, 4, 6, 11)
	_, err := Run(context.Background(), g, train, nil, &Options{Layout: graph.BatchFirst, Solver: LowRank, Retrain: 2})
	if err == nil || !contains(err.Error(), "Options.Retrain") || !contains(err.Error(), "Options.Solver") {
		t.Fatalf("error %v: want one naming Options.Retrain and Options.Solver", err)
	}
}

// TestAutoLowRank: above AutoExactMax parameters Auto takes the dual form
// while the loss terms are no more than the parameters (unless the cost
// model predicts the low-rank path much faster), LowRank when they
// are more (Gauss-Newton, sequence blocks), and CG with the Hessian or
// interval blocks.
func TestAutoLowRank(t *testing.T) {
	g, err := onnx.Load(filepath.Join("..", "benchmarks", "scale", "rnn64.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	P := g.NumParams()
	if P <= AutoExactMax {
		t.Fatalf("rnn64 has %d parameters, want more than %d", P, AutoExactMax)
	}
	layout := graph.BatchFirst
	if g.Inputs[0].Dims[0].Value == -1 && g.Inputs[0].Dims[1].Value != -1 {
		layout = graph.TimeFirst
	}
	// Sequences of 10 steps: P/10 of them have fewer terms than P.
	few := randomData(t, "few", g, layout, P/10-5, 0, 10, 10, 1)
	many := randomData(t, "many", g, layout, P/10+5, 0, 10, 10, 2)
	for _, tc := range []struct {
		data   *blocks.Dataset
		opt    Options
		solver Solver
		why    SolverReason
	}{
		// The dual form's kernel of some 4,400 terms (its products and
		// eigenvalues) is predicted ten times slower than the low-rank
		// path (audit/solvecost); without the low-rank path (exact
		// re-training), the size rule's dual form.
		{few, Options{}, LowRank, ReasonPredicted},
		{few, Options{Retrain: 1}, Dual, ReasonFewerTerms},
		{many, Options{}, LowRank, ReasonLargeModel},
		{many, Options{Curvature: hvp.Hessian}, CG, ReasonLargeModel},
		{many, Options{Blocks: blocks.Intervals, BlockLength: 5}, CG, ReasonLargeModel},
		{many, Options{Solver: CG}, CG, ReasonChosen},
	} {
		tc.opt.Layout = layout
		p := newProblem(t, g, tc.data, tc.opt)
		if s, why := p.solverName(); s != tc.solver || why != tc.why {
			t.Errorf("%d terms, %+v: solver %s (%s), want %s (%s)", p.terms(), tc.opt, s, why, tc.solver, tc.why)
		}
	}
}

// TestLowRankDeterministic: two LowRank audits with the same seed give the
// same intervals and diagnostics, whatever order the streaming workers
// finish in; a cancelled context ends the audit with its error.
func TestLowRankDeterministic(t *testing.T) {
	g := fixtureModel(t, "lstm_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 150, 0, 3, 6, 21)
	test := randomData(t, "test", g, graph.BatchFirst, 6, 0, 3, 6, 22)
	opt := Options{Layout: graph.BatchFirst, Solver: LowRank, Rank: 12, Seed: 4, Workers: 2, leverageRule: -1}
	a, err := Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := flatSteps(a), flatSteps(b)
	for i := range sa {
		if sa[i].Lower != sb[i].Lower || sa[i].Upper != sb[i].Upper {
			t.Fatalf("point %d: [%v, %v] then [%v, %v]", i, sa[i].Lower, sa[i].Upper, sb[i].Lower, sb[i].Upper)
		}
	}
	if a.Diag.GradNorm != b.Diag.GradNorm || a.Diag.LeverageEstimate != b.Diag.LeverageEstimate || !slices.Equal(a.Diag.InfluenceNorms, b.Diag.InfluenceNorms) {
		t.Fatalf("diagnostics differ: %+v vs %+v", a.Diag, b.Diag)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, g, train, test, &opt); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled audit: error %v", err)
	}
}

// TestBlockPassReduced: the block pass in the factor's coordinates
// (lowRankPass.blockPass, mapBlockChunk) equals the definitions computed
// densely from the factor's inverse A = Inv I + U^T diag(D) U formed as
// a P×P matrix: the steps A g_b (infinitesimal) or the solution of
// (A^-1 - J_b^T Lambda_b J_b) delta = g_b (Newton; A^-1 by a dense
// inverse), the leverage matrix Lambda^1/2 J_b A J_b^T Lambda^1/2 and its
// eigenvalues, the own residuals |y - f - J_b delta_b| (or |y - f| in
// sample), the records U delta_b, the norms |delta_b| and |g_b|, and the
// total gradient against the objective's own; to 1e-8 relative, under the
// in-sample rule and the per-block rule of both estimators, with a
// truncated factor (the complement counts).
func TestBlockPassReduced(t *testing.T) {
	ctx := context.Background()
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 40, 0, 4, 6, 11)
	o, err := (&Options{Layout: graph.BatchFirst, Curvature: hvp.GaussNewton, Solver: LowRank, Ridge: 0.3, Workers: 2}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p, err := prepare(o, g, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	terms, err := p.ownTerms()
	if err != nil {
		t.Fatal(err)
	}
	P := len(p.theta)
	f, err := hvp.NewLowRank(ctx, p.objective(p.groups), p.theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: 6, Damping: 0.05, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f.Rank() >= P || !(f.Complement+f.Lambda > 0) {
		t.Fatalf("rank %d of %d, complement %g: want a truncated factor", f.Rank(), P, f.Complement)
	}
	lr := &lowRankPass{p: p, f: f, basis: &table.ShiftBasis{P: P, U: f.U}, terms: terms, slots: forecastSlots(p), curv: p.groups}

	// The dense inverse A and its inverse.
	red, err := f.Reduce()
	if err != nil {
		t.Fatal(err)
	}
	k := f.Rank()
	A := mat.NewDense(P, P, nil)
	for i := 0; i < P; i++ {
		for j := 0; j < P; j++ {
			v := 0.0
			if i == j {
				v = red.Inv
			}
			for r := 0; r < k; r++ {
				v += f.U[r*P+i] * red.D[r] * f.U[r*P+j]
			}
			A.Set(i, j, v)
		}
	}
	var Ainv mat.Dense
	if err := Ainv.Inverse(A); err != nil {
		t.Fatal(err)
	}
	bl := p.scheme.Blocks
	ks := make([]int, len(bl))
	for j := range ks {
		ks[j] = j
	}
	grads, rows, err := blockRows(ctx, p, ks)
	if err != nil {
		t.Fatal(err)
	}
	wantTotal := make([]float64, P)
	if _, err := p.objective(p.groups).Gradient(ctx, p.theta, wantTotal); err != nil {
		t.Fatal(err)
	}

	close := func(what string, got, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, the reference %d", what, len(got), len(want))
		}
		scale := 0.0
		for _, v := range want {
			if !math.IsInf(v, 0) && !math.IsNaN(v) {
				scale = math.Max(scale, math.Abs(v))
			}
		}
		for i := range got {
			if math.IsNaN(want[i]) || math.IsInf(want[i], 0) {
				if !(math.IsNaN(got[i]) && math.IsNaN(want[i])) && got[i] != want[i] {
					t.Fatalf("%s[%d] = %g, the reference %g", what, i, got[i], want[i])
				}
				continue
			}
			if math.Abs(got[i]-want[i]) > 1e-8*scale {
				t.Fatalf("%s[%d] = %.17g, the reference %.17g (scale %g)", what, i, got[i], want[i], scale)
			}
		}
	}
	loss := p.opt.Loss
	for _, tc := range []struct {
		name             string
		withRows, newton bool
	}{{"in-sample", false, false}, {"per-block infinitesimal", true, false}, {"per-block newton", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lr.blockPass(ctx, tc.withRows, tc.newton)
			if err != nil {
				t.Fatal(err)
			}
			close("total", got.total, wantTotal)
			bounded, newtonSteps := 0, 0
			for kb, b := range bl {
				ts := terms[b.Seq]
				m := len(ts)
				gv := mat.NewVecDense(P, grads[kb])
				var delta mat.VecDense
				delta.MulVec(A, gv)
				J := mat.NewDense(max(m, 1), P, nil)
				lam := make([]float64, m)
				for a, tm := range ts {
					J.SetRow(a, rows[kb][tm.forcast])
					lam[a] = tm.w * loss.SecondDerivative(tm.y, tm.fx)
				}
				res := make([]float64, m)
				for a, tm := range ts {
					res[a] = math.Abs(tm.y - tm.fx)
				}
				if tc.withRows && m > 0 {
					J = J.Slice(0, m, 0, P).(*mat.Dense)
					var JA, S mat.Dense
					JA.Mul(J, A)
					S.Mul(&JA, J.T())
					ss := mat.NewSymDense(m, nil)
					for a := 0; a < m; a++ {
						for e := a; e < m; e++ {
							ss.SetSym(a, e, math.Sqrt(lam[a])*(S.At(a, e)+S.At(e, a))/2*math.Sqrt(lam[e]))
						}
					}
					if tc.newton {
						var eig mat.EigenSym
						if !eig.Factorize(ss, false) {
							t.Fatal("eigendecomposition failed")
						}
						levMax := eig.Values(nil)[m-1]
						lev := make([]float64, m)
						for a := range lev {
							lev[a] = ss.At(a, a)
						}
						close(fmt.Sprintf("block %d largest leverage", kb), []float64{got.levMax[kb]}, []float64{levMax})
						close(fmt.Sprintf("block %d leverage", kb), got.lev[kb], lev)
						if got.unbounded[kb] != (levMax > 1-leverageLimit) {
							t.Fatalf("block %d: unbounded %v, largest leverage %g", kb, got.unbounded[kb], levMax)
						}
						if !got.unbounded[kb] {
							bounded++
							// (A^-1 - J^T Lambda J) delta = g.
							M := mat.NewDense(P, P, nil)
							M.Copy(&Ainv)
							for a := 0; a < m; a++ {
								row := J.RawRowView(a)
								for i := 0; i < P; i++ {
									for j := 0; j < P; j++ {
										M.Set(i, j, M.At(i, j)-lam[a]*row[i]*row[j])
									}
								}
							}
							if err := delta.SolveVec(M, gv); err != nil {
								t.Fatal(err)
							}
							newtonSteps++
						}
					}
					var jd mat.VecDense
					jd.MulVec(J, &delta)
					for a, tm := range ts {
						res[a] = math.Abs(tm.y - tm.fx - jd.AtVec(a))
						if tc.newton && got.unbounded[kb] {
							res[a] = math.Inf(1)
						}
					}
				}
				wantRes := make([]float64, len(lr.slots))
				for j := range wantRes {
					wantRes[j] = math.NaN()
				}
				for a, tm := range ts {
					wantRes[lr.slots[tm.f]] = res[a]
				}
				d := delta.RawVector().Data
				ud := make([]float64, k)
				for r := range ud {
					ud[r] = num.Dot(f.U[r*P:(r+1)*P], d)
				}
				close(fmt.Sprintf("block %d record", kb), got.recs[kb].A, ud)
				close(fmt.Sprintf("block %d residuals", kb), got.recs[kb].Res, wantRes)
				close(fmt.Sprintf("block %d norm", kb), []float64{got.norms[kb]}, []float64{num.Norm(d)})
				close(fmt.Sprintf("block %d gradient norm", kb), []float64{got.gnorm[kb]}, []float64{num.Norm(grads[kb])})
			}
			if tc.newton && (bounded == 0 || newtonSteps == 0) {
				t.Fatal("every block unbounded: the Newton step went untested")
			}
		})
	}
}

// TestRetreatToExact: an audit that Auto moved from the exact path to the
// low-rank one (a positive slack) returns to the exact path when the
// probes call for per-block Newton steps whose refinement's budget is
// predicted to cost more than the slack; it then gives exactly the exact
// solver's leave-one-block-out residuals, and its prediction says why.
// With the in-sample rule (no refinement) it stays on the low-rank path.
func TestRetreatToExact(t *testing.T) {
	g := fixtureModel(t, "lstm_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 40, 0, 3, 6, 21)
	run := func(opt Options, slack float64) (*problem, *Fitted) {
		opt.Layout, opt.Seed, opt.Rank = graph.BatchFirst, 4, 12
		p := newProblem(t, g, train, opt)
		if slack > 0 {
			p.solver, p.solverWhy, p.solverCost, p.solverSlack = LowRank, ReasonPredicted, "predicted", slack
		}
		f, err := fit(t.Context(), p, &evaluation{}, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		return p, f
	}
	_, want := run(Options{Solver: Exact}, 0)
	p, got := run(Options{Solver: Exact, leverageRule: -1}, 1e-12)
	if s, why := p.solverName(); s != Exact || why != ReasonSmallModel || got.setting.Solver != "exact" ||
		!strings.Contains(got.setting.SolverPrediction, "predicted; then the low-rank path's probes found a mean own leverage") {
		t.Fatalf("retreat: solver %s (%s), setting %q %q, want exact (small-model) with the reason", s, why, got.setting.Solver, got.setting.SolverPrediction)
	}
	if len(got.loo.entries) == 0 || len(got.loo.entries) != len(want.loo.entries) {
		t.Fatalf("%d residual entries, want %d", len(got.loo.entries), len(want.loo.entries))
	}
	for k, w := range want.loo.entries {
		if !reflect.DeepEqual(got.loo.entries[k], w) {
			t.Fatalf("forecast %v: residuals %v after the retreat, %v from the exact solver", k, got.loo.entries[k], w)
		}
	}
	// A leverage rule that never picks per-block steps: no refinement,
	// no retreat.
	if p, _ := run(Options{Solver: Exact, leverageRule: math.Inf(1)}, 1e-12); p.solver != LowRank {
		t.Errorf("in-sample rule: solver %s, want lowrank kept", p.solver)
	}
}
