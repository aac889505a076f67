package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// randomData returns n sequences of lengths in [minT, maxT] with d
// features; targets are the model's outputs plus noise when g is given.
func randomData(t testing.TB, name string, g *graph.Graph, layout graph.Layout, n, _, minT, maxT int, seed uint64) *blocks.Dataset {
	t.Helper()
	d := g.Inputs[0].Dims[2].Value
	r := rand.New(rand.NewPCG(seed, 5))
	ds := &blocks.Dataset{File: name, IDCol: "id", TimeCol: "t", Targets: []string{"y"}}
	for j := 0; j < d; j++ {
		ds.Features = append(ds.Features, fmt.Sprintf("x%d", j+1))
	}
	for i := 0; i < n; i++ {
		T := minT + r.IntN(maxT-minT+1)
		s := &blocks.Sequence{ID: fmt.Sprintf("s%02d", i)}
		for k := 0; k < T; k++ {
			x := make([]float64, d)
			for j := range x {
				x[j] = r.NormFloat64()
			}
			s.Steps = append(s.Steps, float64(k+1))
			s.X = append(s.X, x)
			s.Y = append(s.Y, []float64{0})
		}
		ds.Seqs = append(ds.Seqs, s)
	}
	// Targets: the model's own forecast plus noise, so residuals are real.
	io, err := modelio.New(g, modelio.Config{Layout: layout}, ds.Features)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ds.Seqs {
		in, err := io.Inputs([]*blocks.Sequence{s}, s.Len(), s.Len())
		if err != nil {
			t.Fatal(err)
		}
		outs, err := g.Run(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		for k := range s.Y {
			s.Y[k][0] = outs[0].F[io.Index(1, s.Len(), 0, k, 0)] + 0.3*r.NormFloat64()
		}
	}
	return ds
}

func fixtureModel(t testing.TB, name string) *graph.Graph {
	t.Helper()
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), name+".onnx"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// newProblem prepares a self-audit of train with two workers.
func newProblem(t *testing.T, g *graph.Graph, train *blocks.Dataset, opt Options) *problem {
	t.Helper()
	o, err := opt.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 2
	p, err := prepare(o, g, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// blockGrads runs the block-gradient phase of p (separate: one pass per
// sequence) and returns the gradients and the per-sequence gradients used.
func blockGrads(t *testing.T, p *problem, separate bool) ([][]float64, *seqGrads) {
	t.Helper()
	sg, err := newSeqGrads(p, separate)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := blockGradients(t.Context(), p, sg)
	if err != nil {
		t.Fatal(err)
	}
	return grads, sg
}

// TestBlockGradientsAddUp: the block gradients of each scheme add up as
// the loss does (docs/design.md, sections 2.2 and 3): sequence blocks and
// interval blocks each partition the loss terms, so both sums equal the full
// gradient; a nested block deletes the union of its sequence and its
// interval.
func TestBlockGradientsAddUp(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 9, 2, 4, 7, 1)
	ctx := context.Background()
	full := make([]float64, g.NumParams())
	rs := newProblem(t, g, train, Options{Layout: graph.BatchFirst})
	if _, err := rs.objective(rs.groups).Gradient(ctx, rs.theta, full); err != nil {
		t.Fatal(err)
	}
	sum := func(gs [][]float64) []float64 {
		s := make([]float64, len(full))
		for _, g := range gs {
			num.AddScaled(s, 1, g)
		}
		return s
	}
	close := func(what string, a, b []float64) {
		t.Helper()
		d := make([]float64, len(a))
		for i := range a {
			d[i] = a[i] - b[i]
		}
		if num.Norm(d) > 1e-10*num.Norm(b) {
			t.Errorf("%s: differs by %.3g (|b| = %.3g)", what, num.Norm(d), num.Norm(b))
		}
	}
	gs, sgs := blockGrads(t, rs, false)
	close("sum of sequence-block gradients vs gradient", sum(gs), full)

	ri := newProblem(t, g, train, Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 2})
	gi, _ := blockGrads(t, ri, false)
	if len(gi) != 4 {
		t.Fatalf("%d interval blocks, want 4 (max length 7, K 2)", len(gi))
	}
	close("sum of interval-block gradients vs gradient", sum(gi), full)

	rn := newProblem(t, g, train, Options{Layout: graph.BatchFirst, Blocks: blocks.Nested, BlockLength: 2})
	gn, _ := blockGrads(t, rn, false)
	// Nested (i, j) = loss of sequence i plus loss of interval j minus
	// their intersection, computed here by weights directly.
	parts := rn.objective(rn.parts)
	for k, b := range rn.scheme.Blocks[:5] {
		want := make([]float64, len(full))
		for pi, gr := range rn.parts {
			w := make([]float64, len(gr.weight))
			for _, f := range rn.io.Forecasts(gr.T) {
				q := rn.io.Index(1, gr.T, 0, f.T, f.H)
				if b.Deletes(gr.seqs[0], f.T, f.H) {
					w[q] = gr.weight[q]
				}
			}
			out := [][]float64{nil}
			if err := parts.Gradients(ctx, rn.theta, []hvp.Job{{Batch: pi, Weight: w}}, out, nil); err != nil {
				t.Fatal(err)
			}
			num.AddScaled(want, 1, out[0])
		}
		close(fmt.Sprintf("nested block %s", b.Label), gn[k], want)
	}
	// The batched passes split by sequence give what one pass per
	// sequence gives, in every scheme.
	for _, c := range []struct {
		o     Options
		batch [][]float64
	}{{Options{Layout: graph.BatchFirst}, gs}, {Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 2}, gi}, {Options{Layout: graph.BatchFirst, Blocks: blocks.Nested, BlockLength: 2}, gn}} {
		sep, sg := blockGrads(t, newProblem(t, g, train, c.o), true)
		if sg.chunks != nil || sgs.chunks == nil || sgs.separate {
			t.Fatal("the two runs did not take the two paths")
		}
		for k := range sep {
			close(fmt.Sprintf("%s block %d, batched vs one pass per sequence", c.o.Blocks, k), c.batch[k], sep[k])
		}
	}
}

// TestSelfAudit: without test data every training point's interval uses
// the residuals of the other sequences only.
func TestSelfAudit(t *testing.T) {
	g := fixtureModel(t, "rnn_tanh_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 12, 2, 5, 5, 2)
	res, err := Run(context.Background(), g, train, nil, &Options{Layout: graph.BatchFirst})
	if err != nil {
		t.Fatal(err)
	}
	if !res.SelfAudit || res.Summary == nil {
		t.Fatalf("self audit: %v, summary %v", res.SelfAudit, res.Summary)
	}
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			if st.M != 11 {
				t.Fatalf("sequence %s row %d: %d residuals, want 11 (the other sequences)", s.ID, st.Row, st.M)
			}
		}
	}
}

// TestDeterministic: the same inputs give the same result, to the bit,
// whatever the number of workers.
func TestDeterministic(t *testing.T) {
	g := fixtureModel(t, "lstm_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 10, 2, 3, 6, 3)
	test := randomData(t, "test", g, graph.BatchFirst, 6, 2, 3, 8, 4)
	var first string
	for _, w := range []int{1, 2, 3} {
		res, err := Run(context.Background(), g, train, test, &Options{Layout: graph.BatchFirst, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		for i := range res.Diag.Phases {
			res.Diag.Phases[i].Seconds, res.Diag.Phases[i].CPUSeconds = 0, 0
		}
		// The pointers' values, not their addresses.
		sum, diag := *res.Summary, res.Diag
		beyond, fit, scheme, over := sum.Beyond, diag.Fit, diag.Scheme, sum.OverTime
		sum.Beyond, sum.OverTime, diag.Fit, diag.DampingSensitivity, diag.Scheme = nil, nil, nil, nil, nil
		got := fmt.Sprintf("%+v %+v %+v %+v %+v %+v %+v", sum, diag, beyond, *fit, *scheme, res.Verdict, *over)
		for _, sq := range res.Sequences {
			for _, st := range sq.Steps {
				y := math.NaN()
				if st.Target != nil {
					y = *st.Target
				}
				got += fmt.Sprint(sq.ID, st.Row, st.Horizon, st.Prediction, st.Lower, st.Upper, st.NaiveLower, st.NaiveUpper, st.M, y)
			}
		}
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("workers %d: result differs from the first run", w)
		}
	}
}

// TestRunErrors: clear errors for options and data that cannot work.
func TestRunErrors(t *testing.T) {
	g := fixtureModel(t, "rnn_tanh_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 5, 2, 4, 4, 5)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opt  Options
		want string
	}{
		{"no layout", Options{}, "layout is not known"},
		{"alpha", Options{Layout: graph.BatchFirst, Alpha: 0.7}, "alpha 0.7"},
		{"interval without K", Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals}, "block length"},
		{"thresholds", Options{Layout: graph.BatchFirst, Low: ptr(5), High: ptr(4)}, "low threshold 5"},
		{"params", Options{Layout: graph.BatchFirst, Params: "nothing*"}, "no parameter matches"},
		{"solver", Options{Layout: graph.BatchFirst, Solver: "magic"}, "unknown solver"},
	} {
		_, err := Run(ctx, g, train, nil, &tc.opt)
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	// A dataset with the wrong number of features.
	bad := *train
	bad.Features = []string{"x1"}
	seqs := make([]*blocks.Sequence, len(train.Seqs))
	for i, s := range train.Seqs {
		c := *s
		c.X = make([][]float64, len(s.X))
		for k := range s.X {
			c.X[k] = s.X[k][:1]
		}
		seqs[i] = &c
	}
	bad.Seqs = seqs
	if _, err := Run(ctx, g, &bad, nil, &Options{Layout: graph.BatchFirst}); err == nil || !contains(err.Error(), "3 features") {
		t.Errorf("feature mismatch: error %v", err)
	}
}

func ptr(v float64) *float64 { return &v }

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestSolversAndSchemes: exact and conjugate-gradient solves give the
// same intervals; LiSSA and the interval and nested schemes run end to end
// with sensible output.
func TestSolversAndSchemes(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 14, 0, 4, 6, 11)
	test := randomData(t, "test", g, graph.BatchFirst, 5, 0, 4, 7, 12)
	ctx := context.Background()
	// The infinitesimal estimator: the Newton one divides by 1 - leverage,
	// which with 14 sequences amplifies CG's estimated lambda (below).
	base := Options{Layout: graph.BatchFirst, Curvature: hvp.GaussNewton, Damping: 0.05, Estimator: Infinitesimal}
	ex, err := Run(ctx, g, train, test, &Options{Layout: base.Layout, Curvature: base.Curvature, Damping: base.Damping, Estimator: base.Estimator, Solver: Exact})
	if err != nil {
		t.Fatal(err)
	}
	cg, err := Run(ctx, g, train, test, &Options{Layout: base.Layout, Curvature: base.Curvature, Damping: base.Damping, Estimator: base.Estimator, Solver: CG})
	if err != nil {
		t.Fatal(err)
	}
	// CG estimates the trace (so lambda) by Hutchinson's method; compare
	// the intervals relative to their width, loosely.
	for i := range ex.Sequences {
		for j, a := range ex.Sequences[i].Steps {
			b := cg.Sequences[i].Steps[j]
			if math.IsInf(a.Upper, 0) || math.IsInf(a.Lower, 0) {
				if a.Upper != b.Upper || a.Lower != b.Lower {
					t.Fatalf("infinite limits differ: %v vs %v", a, b)
				}
				continue
			}
			w := a.Upper - a.Lower
			if math.Abs(a.Upper-b.Upper) > 0.02*w || math.Abs(a.Lower-b.Lower) > 0.02*w {
				t.Fatalf("sequence %d step %d: exact [%g, %g], cg [%g, %g]", i, j, a.Lower, a.Upper, b.Lower, b.Upper)
			}
		}
	}
	for _, opt := range []Options{
		{Layout: graph.BatchFirst, Curvature: hvp.GaussNewton, Damping: 0.5, Solver: LiSSA},
		{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 2},
		{Layout: graph.BatchFirst, Blocks: blocks.Nested, BlockLength: 3},
	} {
		res, err := Run(ctx, g, train, test, &opt)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		if res.Summary == nil || !(res.Summary.Coverage > 0.3) || res.Summary.Points == 0 {
			t.Errorf("%s/%s: implausible summary %+v", opt.Solver, res.Setting.Blocks, res.Summary)
		}
	}
}

// TestModelShapes runs the audit on models of every supported form and
// checks the forecasts it lists.
func TestModelShapes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		model    string
		layout   graph.Layout
		perStep  bool
		horizons int
	}{
		{"lstm_last_bf", graph.BatchFirst, false, 1},
		{"gru_2l_tf", graph.TimeFirst, true, 1},
		{"lstm_packed_bf", graph.BatchFirst, true, 1},
		{"gru_horizon3_bf", graph.BatchFirst, true, 3},
		{"rnn_bidir_bf", graph.BatchFirst, true, 1},
	} {
		g := fixtureModel(t, tc.model)
		var cols []string
		for j := range g.Inputs[0].Dims[2].Value {
			cols = append(cols, fmt.Sprintf("x%d", j+1))
		}
		io, err := modelio.New(g, modelio.Config{Layout: tc.layout}, cols)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if io.PerStep() != tc.perStep || io.Horizons() != tc.horizons {
			t.Errorf("%s: per step %v, %d horizons; want %v, %d", tc.model, io.PerStep(), io.Horizons(), tc.perStep, tc.horizons)
		}
		train := randomData(t, "train", g, tc.layout, 10, 0, 3, 6, 21)
		test := randomData(t, "test", g, tc.layout, 4, 0, 3, 6, 22)
		res, err := Run(ctx, g, train, test, &Options{Layout: tc.layout})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		for i, s := range res.Sequences {
			T := test.Seqs[i].Len()
			want := T * tc.horizons
			if !tc.perStep {
				want = 1
			}
			if len(s.Steps) != want {
				t.Errorf("%s: sequence %s has %d forecasts, want %d", tc.model, s.ID, len(s.Steps), want)
			}
			for _, st := range s.Steps {
				if st.Row+st.Horizon < T && st.Target == nil {
					t.Errorf("%s: forecast at row %d horizon %d lacks its known target", tc.model, st.Row, st.Horizon)
				}
				if st.M == 0 && !math.IsInf(st.Upper, 1) {
					t.Errorf("%s: no residuals but a finite upper limit", tc.model)
				}
			}
		}
	}
}

// TestPerHorizon: a model with three horizons gets the coverage, mean
// finite width and count of each horizon, recounted here from the
// intervals of the sequences; a model with one horizon gets none.
func TestPerHorizon(t *testing.T) {
	ctx := context.Background()
	g := fixtureModel(t, "gru_horizon3_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 20, 0, 3, 6, 41)
	test := randomData(t, "test", g, graph.BatchFirst, 30, 0, 3, 6, 42)
	res, err := Run(ctx, g, train, test, &Options{Layout: graph.BatchFirst})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if len(s.CoveragePerHorizon) != 3 || len(s.LengthPerHorizon) != 3 || len(s.PointsPerHorizon) != 3 {
		t.Fatalf("per horizon: %v %v %v, want 3 values each", s.CoveragePerHorizon, s.LengthPerHorizon, s.PointsPerHorizon)
	}
	var covered, width, finite [3]float64
	var n [3]int
	for _, q := range res.Sequences {
		for _, st := range q.Steps {
			if st.Target == nil {
				continue
			}
			h := st.Horizon
			n[h]++
			if st.Lower <= *st.Target && *st.Target <= st.Upper {
				covered[h]++
			}
			if !math.IsInf(st.Lower, 0) && !math.IsInf(st.Upper, 0) {
				width[h] += st.Upper - st.Lower
				finite[h]++
			}
		}
	}
	total := 0
	for h := range 3 {
		total += n[h]
		if s.PointsPerHorizon[h] != n[h] || s.CoveragePerHorizon[h] != covered[h]/float64(n[h]) ||
			math.Abs(s.LengthPerHorizon[h]-width[h]/finite[h]) > 1e-12*width[h] {
			t.Errorf("horizon %d: %d points, coverage %g, width %g; recounted %d, %g, %g", h,
				s.PointsPerHorizon[h], s.CoveragePerHorizon[h], s.LengthPerHorizon[h], n[h], covered[h]/float64(n[h]), width[h]/finite[h])
		}
	}
	if total != s.Points || n[2] >= n[0] {
		t.Errorf("%d points over the horizons, %d in all; horizon 2 has %d, horizon 0 %d (want fewer: the last rows have no target 2 ahead)", total, s.Points, n[2], n[0])
	}

	g1 := fixtureModel(t, "gru_2l_tf")
	res, err = Run(ctx, g1, randomData(t, "train", g1, graph.TimeFirst, 10, 0, 3, 6, 43), nil, &Options{Layout: graph.TimeFirst})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.CoveragePerHorizon != nil || res.Summary.PointsPerHorizon != nil {
		t.Errorf("one horizon: per horizon %v %v, want none", res.Summary.CoveragePerHorizon, res.Summary.PointsPerHorizon)
	}
}

// TestUnlabelledTest: a test set without targets gets intervals at every
// forecast and no summary.
func TestUnlabelledTest(t *testing.T) {
	g := fixtureModel(t, "rnn_tanh_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 10, 0, 4, 6, 31)
	test := randomData(t, "test", g, graph.BatchFirst, 3, 0, 5, 5, 32)
	test.Targets = nil
	for _, s := range test.Seqs {
		s.Y = nil
	}
	res, err := Run(context.Background(), g, train, test, &Options{Layout: graph.BatchFirst})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != nil || res.Calibration != nil {
		t.Errorf("unlabelled test data: summary %+v, calibration %v", res.Summary, res.Calibration)
	}
	for _, s := range res.Sequences {
		if len(s.Steps) != 5 {
			t.Fatalf("sequence %s: %d forecasts, want 5", s.ID, len(s.Steps))
		}
		for _, st := range s.Steps {
			if st.Target != nil || !(st.Lower <= st.Upper) {
				t.Errorf("forecast %+v", st)
			}
		}
	}
}

// TestCalibrationCurve: each point of the calibration curve is the
// coverage a whole audit at that alpha reports (the curve counts, the
// audit selects limits; fewer than calibrationMax labelled points, so the
// curve uses them all).
func TestCalibrationCurve(t *testing.T) {
	g := fixtureModel(t, "gru_2l_tf")
	train := randomData(t, "train", g, graph.TimeFirst, 30, 2, 2, 7, 5)
	test := randomData(t, "test", g, graph.TimeFirst, 40, 2, 2, 7, 6)
	ctx := context.Background()
	base, err := Run(ctx, g, train, test, &Options{Layout: graph.TimeFirst})
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Calibration) != len(calibrationAlphas) {
		t.Fatalf("%d calibration points, want %d", len(base.Calibration), len(calibrationAlphas))
	}
	distinct := map[float64]bool{}
	for _, c := range base.Calibration {
		if c.Alpha >= 0.5 {
			continue // Options allow alpha below 0.5 only
		}
		res, err := Run(ctx, g, train, test, &Options{Layout: graph.TimeFirst, Alpha: c.Alpha})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Coverage != c.Coverage {
			t.Errorf("alpha %g: curve %.6f, audit %.6f", c.Alpha, c.Coverage, res.Summary.Coverage)
		}
		distinct[c.Coverage] = true
	}
	if len(distinct) < 4 {
		t.Errorf("the curve barely moves over the alpha grid: %+v", base.Calibration)
	}
}

// TestCalibrationAllPoints: with more labelled points than the 2000 an
// evenly spaced subsample once took, the curve at the audit's alpha is
// the audit's coverage exactly, so it counts every point.
func TestCalibrationAllPoints(t *testing.T) {
	g := fixtureModel(t, "gru_2l_tf")
	train := randomData(t, "train", g, graph.TimeFirst, 30, 2, 2, 7, 5)
	test := randomData(t, "test", g, graph.TimeFirst, 800, 2, 3, 4, 8)
	for _, alpha := range []float64{0.1, 0.25} {
		res, err := Run(context.Background(), g, train, test, &Options{Layout: graph.TimeFirst, Alpha: alpha})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Points <= 2000 {
			t.Fatalf("%d labelled points: the test needs more than 2000", res.Summary.Points)
		}
		for _, c := range res.Calibration {
			if c.Alpha == alpha && c.Coverage != res.Summary.Coverage {
				t.Errorf("alpha %g: curve %.6f, audit %.6f over %d points", alpha, c.Coverage, res.Summary.Coverage, res.Summary.Points)
			}
		}
	}
}

// TestStepCoverageWarning: a step is named only when its coverage is below
// 1 - 2 alpha by more than two binomial standard errors, with at least 20
// values; the memorisation sentence needs test errors at least 1.2 times
// the training errors at every named step, and is never given in a
// self-audit (where both are the training data).
func TestStepCoverageWarning(t *testing.T) {
	// Step 1: 0.70 of 1000 (two SEs 0.025): named. Step 2: 0.78 of 1000:
	// within sampling error. Step 3: 0.5 of 10: too few values.
	s := &Summary{Alpha: 0.1, CoveragePerStep: []float64{0.70, 0.78, 0.5}, PointsPerStep: []int{1000, 1000, 10}, RMSEPerStep: []float64{1.5, 1, 1}}
	for _, c := range []struct {
		name     string
		train    float64 // training residual at every row
		self     bool
		memorise bool
	}{{"memorised", 1, false, true}, {"not memorised", 1.4, false, false}, {"self-audit", 1, true, false}} {
		t.Run(c.name, func(t *testing.T) {
			naive := map[forecast][]float64{}
			for row := 0; row < 3; row++ {
				naive[forecast{T: row}] = []float64{c.train, -c.train}
			}
			warns := stepCoverageWarnings(s, naive, c.self)
			if len(warns) != 1 {
				t.Fatalf("%d warnings, want 1", len(warns))
			}
			w := warns[0]
			if w.Code != StepCoverage || w.Step != 0 || w.Figure != 0.70 || w.Count != 1000 || math.Abs(w.Bound-0.8) > 1e-15 {
				t.Errorf("does not name step 1 alone with its coverage: %+v", w)
			}
			if got := w.Ratio >= 1.2; got != c.memorise {
				t.Errorf("memorisation ratio %g, want >= 1.2: %v", w.Ratio, c.memorise)
			}
		})
	}
	if w := stepCoverageWarnings(&Summary{Alpha: 0.1, CoveragePerStep: []float64{0.79}, PointsPerStep: []int{1000}, RMSEPerStep: []float64{1}}, nil, false); len(w) != 0 {
		t.Errorf("coverage within sampling error of the guarantee warned: %+v", w)
	}
}

// TestWidthWarning: intervals more than WideBound times the in-sample
// width (or split conformal's) are warned about with the ratio; at the
// bound nothing is said.
func TestWidthWarning(t *testing.T) {
	for _, c := range []struct {
		jack, naive, split float64
		want               []WarningCode
	}{
		{2, 1, 0, nil},
		{2.1, 1, 0, []WarningCode{TooWide}},
		{5, 1, 2, []WarningCode{TooWide, WiderThanCalibrated}},
		{3, 2, 1, []WarningCode{WiderThanCalibrated}},
	} {
		s := &Summary{MeanLength: c.jack, Naive: NaiveSummary{MeanLength: c.naive}}
		var conf *Conformal
		if c.split > 0 {
			conf = &Conformal{Kinds: []interval.KindSummary{{Kind: interval.KindSplit, MeanLength: c.split}}}
		}
		var got []WarningCode
		for _, w := range widthWarnings(s, conf) {
			got = append(got, w.Code)
			ref := c.naive
			if w.Code == WiderThanCalibrated {
				ref = c.split
			}
			if math.Abs(w.Figure-c.jack/ref) > 1e-12 || w.Ratio != ref {
				t.Errorf("%+v: figure %g ratio %g", c, w.Figure, w.Ratio)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: warnings %v, want %v", c, got, c.want)
		}
	}
}

// TestDualSolver: with fewer loss terms than parameters the automatic
// solver is the dual form, and its intervals (default Newton estimator)
// are the dense exact solver's.
func TestDualSolver(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 14, 0, 4, 6, 11)
	test := randomData(t, "test", g, graph.BatchFirst, 5, 0, 4, 7, 12)
	ctx := context.Background()
	auto, err := Run(ctx, g, train, test, &Options{Layout: graph.BatchFirst})
	if err != nil {
		t.Fatal(err)
	}
	st := auto.Setting
	if st.Solver != string(Dual) || st.SolverReason != string(ReasonFewerTerms) || st.LossTerms > g.NumParams() || st.LossTerms == 0 {
		t.Fatalf("solver %s (%s), %d terms, %d parameters: want dual for fewer terms", st.Solver, st.SolverReason, st.LossTerms, g.NumParams())
	}
	ex, err := Run(ctx, g, train, test, &Options{Layout: graph.BatchFirst, Solver: Exact})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Setting.SolverReason != string(ReasonChosen) {
		t.Errorf("explicit exact solver: reason %q", ex.Setting.SolverReason)
	}
	n := 0
	for i := range ex.Sequences {
		for j, a := range ex.Sequences[i].Steps {
			b := auto.Sequences[i].Steps[j]
			w := a.Upper - a.Lower
			if math.IsInf(w, 0) || math.IsNaN(w) {
				continue
			}
			n++
			if math.Abs(a.Upper-b.Upper) > 1e-7*w || math.Abs(a.Lower-b.Lower) > 1e-7*w {
				t.Fatalf("sequence %d step %d: exact [%.12g, %.12g], dual [%.12g, %.12g]", i, j, a.Lower, a.Upper, b.Lower, b.Upper)
			}
		}
	}
	if n == 0 {
		t.Fatal("no finite intervals compared")
	}
}
