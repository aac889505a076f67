package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
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
	ev, err := evaluate(p)
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
		e := 1e-4 / math.Max(norm(delta), 1e-12)
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
	entries := map[forecast][]entry{}
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
				r = math.Abs(tm.y - tm.fx - own[p.io.index(1, p.parts[partOf[b.Seq]].T, 0, tm.f.T, tm.f.H)])
			}
			entries[tm.f] = append(entries[tm.f], entry{blk: k, seq: b.Seq, r: r})
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
	l := jackknifeLimits(ctx, 2, o.Alpha, ev.test, 0, preds, entries, false, nil)
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
func TestLowRankFullRank(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, BatchFirst, 14, 0, 4, 6, 11)
	test := randomData(t, "test", g, BatchFirst, 5, 0, 4, 7, 12)
	P := g.NumParams()
	for _, tc := range []struct {
		name     string
		est      Estimator
		rule     float64
		inSample bool
	}{
		{"infinitesimal per-block", Infinitesimal, -1, false},
		{"newton per-block", Newton, -1, false},
		{"infinitesimal in-sample", Infinitesimal, math.Inf(1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := Options{Layout: BatchFirst, Curvature: hvp.GaussNewton, Damping: 0.05, Estimator: tc.est, Workers: 2}
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
	train := randomData(t, "train", g, BatchFirst, 8, 0, 4, 6, 11)
	_, err := Run(context.Background(), g, train, nil, &Options{Layout: BatchFirst, Solver: LowRank, Retrain: 2})
	if err == nil || !contains(err.Error(), "Options.Retrain") || !contains(err.Error(), "Options.Solver") {
		t.Fatalf("error %v: want one naming Options.Retrain and Options.Solver", err)
	}
}

// TestAutoLowRank: above AutoExactMax parameters Auto takes the dual form
// while the loss terms are no more than the parameters, LowRank when they
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
	layout := BatchFirst
	if g.Inputs[0].Dims[0].Value == -1 && g.Inputs[0].Dims[1].Value != -1 {
		layout = TimeFirst
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
		{few, Options{}, Dual, ReasonFewerTerms},
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
	train := randomData(t, "train", g, BatchFirst, 150, 0, 3, 6, 21)
	test := randomData(t, "test", g, BatchFirst, 6, 0, 3, 6, 22)
	opt := Options{Layout: BatchFirst, Solver: LowRank, Rank: 12, Seed: 4, Workers: 2, leverageRule: -1}
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
// (blockPass) gives MapBlock's records of the steps formed in parameter
// space (blockPassReference), their norms, residuals, shifts and
// leverage, to 1e-12 relative, under the in-sample rule and the
// per-block rule of both estimators, with a truncated factor (the
// complement counts).
func TestBlockPassReduced(t *testing.T) {
	ctx := context.Background()
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, BatchFirst, 150, 0, 4, 6, 11)
	o, err := (&Options{Layout: BatchFirst, Curvature: hvp.GaussNewton, Solver: LowRank, Workers: 2}).withDefaults()
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
	basis := &ShiftBasis{P: P, U: f.U}
	nF := maxForecasts(p)
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
			if math.Abs(got[i]-want[i]) > 1e-12*scale {
				t.Fatalf("%s[%d] = %.17g, the reference %.17g (scale %g)", what, i, got[i], want[i], scale)
			}
		}
	}
	for _, tc := range []struct {
		name             string
		withRows, newton bool
	}{{"in-sample", false, false}, {"per-block infinitesimal", true, false}, {"per-block newton", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := blockPass(ctx, p, f, basis, terms, nF, tc.withRows, tc.newton)
			if err != nil {
				t.Fatal(err)
			}
			want, err := blockPassReference(ctx, p, f, basis, terms, nF, tc.withRows, tc.newton)
			if err != nil {
				t.Fatal(err)
			}
			gt, err := CombineBlocks(got.recs)
			if err != nil {
				t.Fatal(err)
			}
			wt, err := CombineBlocks(want.recs)
			if err != nil {
				t.Fatal(err)
			}
			if gt.N != wt.N || gt.K != wt.K || gt.KS != wt.KS || gt.F != wt.F {
				t.Fatalf("table %d×(%d+%d, %d), the reference %d×(%d+%d, %d)", gt.N, gt.K, gt.KS, gt.F, wt.N, wt.K, wt.KS, wt.F)
			}
			close("coefficients", gt.Coef, wt.Coef)
			close("residuals", gt.Res, wt.Res)
			close("norms", got.norms, want.norms)
			close("gradient norms", got.gnorm, want.gnorm)
			close("shifts", got.shift, want.shift)
			close("total", got.total, want.total)
			if tc.withRows {
				close("largest leverage", got.levMax, want.levMax)
				bounded := 0
				for k := range got.lev {
					close("leverage", got.lev[k], want.lev[k])
					if got.unbounded[k] != want.unbounded[k] {
						t.Fatalf("block %d: unbounded %v, the reference %v", k, got.unbounded[k], want.unbounded[k])
					}
					if !got.unbounded[k] {
						bounded++
					}
				}
				if bounded == 0 {
					t.Fatal("every block unbounded: the Newton step went untested")
				}
			}
		})
	}
}

// blockPassReference is the block pass as it was before the reduced
// form (blockPass): every step delta_b formed in parameter space by
// SolveAll and newtonStep, and recorded by MapBlock, the definition of a
// BlockRecord. TestBlockPassReduced checks blockPass against it.
func blockPassReference(ctx context.Context, p *problem, f hvp.Factor, basis *ShiftBasis, terms [][]ownTerm, nF int, withRows, newton bool) (*blockPassOut, error) {
	bl := p.scheme.Blocks
	nb := len(bl)
	blockOf := make([]int, p.train.Len())
	for i := range blockOf {
		blockOf[i] = -1
	}
	for k, b := range bl {
		blockOf[b.Seq] = k
	}
	out := &blockPassOut{recs: make([]BlockRecord, nb), gnorm: make([]float64, nb), norms: make([]float64, nb), shift: make([]float64, nb)}
	if withRows {
		out.lev, out.levMax, out.unbounded = make([][]float64, nb), make([]float64, nb), make([]bool, nb)
	}
	P := len(p.theta)
	s, err := newRowStream(p, p.train, streamBatch)
	if err != nil {
		return nil, err
	}
	out.total = make([]float64, P)
	if p.opt.Ridge != 0 {
		addTo(out.total, p.theta, p.opt.Ridge)
	}
	fold := newOrderedFold(out.total)
	done := 0
	var mu sync.Mutex
	loss := p.opt.Loss
	err = s.run(ctx, true, withRows, func(c int, gr *group, grads, rows [][][]float64) error {
		g := make([][]float64, len(gr.seqs))
		for b := range g {
			g[b] = grads[b][0]
		}
		u := make([][]float64, len(g))
		if err := f.SolveAll(ctx, u, g); err != nil {
			return err
		}
		partial := make([]float64, P)
		for b, i := range gr.seqs {
			addTo(partial, g[b], 1)
			k := blockOf[i]
			if k < 0 {
				continue
			}
			ts := terms[i]
			out.gnorm[k] = norm(g[b])
			delta, res, shift := u[b], make([]float64, len(ts)), make([]float64, len(ts))
			if withRows {
				J := make([][]float64, len(ts))
				for a, t := range ts {
					J[a] = rows[b][t.forcast]
				}
				AJ := make([][]float64, len(J))
				if err := f.SolveAll(ctx, AJ, J); err != nil {
					return err
				}
				if newton {
					st, err := newtonStep(loss, ts, J, AJ, u[b])
					if err != nil {
						return fmt.Errorf("audit: block %s: %w", bl[k].Label, err)
					}
					delta, res, shift = st.delta, st.res, st.shift
					out.lev[k], out.levMax[k], out.unbounded[k] = st.lev, st.levMax, st.unbounded
				} else {
					for a, t := range ts {
						jd := dotv(J[a], u[b])
						res[a], shift[a] = math.Abs(t.y-t.fx-jd), math.Abs(jd)
					}
				}
			} else {
				for a, t := range ts {
					res[a] = math.Abs(t.y - t.fx)
				}
			}
			byPos := make([]float64, nF)
			for j := range byPos {
				byPos[j] = math.NaN()
			}
			sh := 0.0
			for a, t := range ts {
				byPos[t.forcast] = res[a]
				sh += shift[a]
			}
			if len(ts) > 0 {
				out.shift[k] = sh / float64(len(ts))
			}
			rec, err := MapBlock(basis, delta, byPos)
			if err != nil {
				return err
			}
			out.recs[k] = rec
			out.norms[k] = norm(delta)
		}
		fold.add(c, partial)
		mu.Lock()
		done += len(gr.seqs)
		p.opt.progress("block pass", done, p.train.Len())
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
