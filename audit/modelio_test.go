package audit

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// The models of modelio/testdata (make.py): exported by PyTorch 1.13 as
// practitioners export them, with float64 references.
const modelioDir = "modelio/testdata"

// loadModelio loads a model of modelio/testdata pruned to output (""
// the first) and its fixture, in onnxtest's format.
func loadModelio(t *testing.T, name, output string) (*graph.Graph, *onnxtest.Fixture) {
	t.Helper()
	fx, err := onnxtest.ReadFixture(modelioDir, name)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := onnx.LoadOutput(filepath.Join(modelioDir, fx.Model), output)
	if err != nil {
		t.Fatal(err)
	}
	return g, fx
}

func readModelio(t *testing.T, name string) (train, test *blocks.Dataset) {
	t.Helper()
	var err error
	if train, err = blocks.ReadFile(filepath.Join(modelioDir, name+"_train.csv"), nil); err != nil {
		t.Fatal(err)
	}
	if test, err = blocks.ReadFile(filepath.Join(modelioDir, name+"_test.csv"), &blocks.Options{Features: train.Features}); err != nil {
		t.Fatal(err)
	}
	return train, test
}

// modelioAudit audits a model of modelio/testdata on its data.
func modelioAudit(t *testing.T, name string, o Options) (*Result, *onnxtest.Fixture) {
	t.Helper()
	out, _, _ := modelio.ParseOutput(o.Output)
	g, fx := loadModelio(t, name, out)
	o.Layout = graph.BatchFirst
	if fx.Layout == "time-first" {
		o.Layout = graph.TimeFirst
	}
	train, test := readModelio(t, name)
	res, err := Run(context.Background(), g, train, test, &o)
	if err != nil {
		t.Fatal(err)
	}
	return res, fx
}

// checkFinite fails unless every interval whose row all training
// sequences reach (rows 0 to 4 of the first forecast row) is finite.
func checkFinite(t *testing.T, res *Result) {
	t.Helper()
	n := 0
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			if st.Row+st.Horizon > 4 {
				continue
			}
			n++
			if math.IsInf(st.Lower, 0) || math.IsInf(st.Upper, 0) || math.IsNaN(st.Lower) || math.IsNaN(st.Upper) {
				t.Errorf("sequence %s row %d horizon %d: limits [%g, %g]", s.ID, st.Row, st.Horizon, st.Lower, st.Upper)
			}
		}
	}
	if n == 0 {
		t.Fatal("no interval checked")
	}
}

func inputsOf(res *Result) string {
	var parts []string
	for _, in := range res.Model.Inputs {
		what := strings.Join(in.Columns, ",")
		if in.Lengths {
			what = "lengths"
		}
		parts = append(parts, in.Name+"="+what)
	}
	return strings.Join(parts, " ")
}

// TestSeveralInputs fills integer inputs of category codes from named
// columns.
func TestSeveralInputs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inputs map[string][]string
		want   string
	}{
		{"embed_input", map[string][]string{"x_cat": {"store", "dow"}}, "x=x1,x2 x_cat=store,dow"},
		{"embed_named", nil, "x=x1,x2 store=store"},
		{"embed_cast", nil, "x=x1,x2,store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := modelioAudit(t, tc.name, Options{Inputs: tc.inputs})
			if got := inputsOf(res); got != tc.want {
				t.Errorf("inputs %s, want %s", got, tc.want)
			}
			checkFinite(t, res)
		})
	}

	// Without --input, the message names the input and the flag, not a
	// feature count.
	g, _ := loadModelio(t, "embed_input", "")
	train, _ := readModelio(t, "embed_input")
	_, err := Run(context.Background(), g, train, nil, &Options{Layout: graph.BatchFirst})
	var oe *OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "x_cat=COLUMN") || !slices.Contains(oe.Options, OptInputs) || strings.Contains(err.Error(), "the file has") {
		t.Errorf("embed_input without Inputs: %v", err)
	}
	// A code that is not a whole number is named with its line.
	bad := *train
	bad.Seqs = slices.Clone(train.Seqs)
	s := *bad.Seqs[0]
	s.X = slices.Clone(s.X)
	s.X[1] = slices.Clone(s.X[1])
	s.X[1][slices.Index(train.Features, "dow")] = 2.5
	bad.Seqs[0] = &s
	_, err = Run(context.Background(), g, &bad, nil, &Options{Layout: graph.BatchFirst, Inputs: map[string][]string{"x_cat": {"store", "dow"}}})
	if err == nil || !strings.Contains(err.Error(), `column "dow" holds 2.5`) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("fractional code: %v", err)
	}
}

// TestGatherGradient checks the training loss's gradient of the models
// with embeddings against central differences: the embedding table is
// differentiated (its rows of the codes present get non-zero gradients),
// the codes are not.
func TestGatherGradient(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		inputs map[string][]string
		table  string
	}{
		{"embed_input", map[string][]string{"x_cat": {"store", "dow"}}, "dow.weight"},
		{"embed_cast", nil, "emb.weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := loadModelio(t, tc.name, "")
			train, _ := readModelio(t, tc.name)
			o := Options{Layout: graph.BatchFirst, Inputs: tc.inputs}
			o, g, err := validate(g, train, nil, &o)
			if err != nil {
				t.Fatal(err)
			}
			p, err := prepare(o, g, train, nil)
			if err != nil {
				t.Fatal(err)
			}
			obj := p.objective(p.groups)
			theta := g.Theta()
			grad := make([]float64, len(theta))
			if _, err := obj.Gradient(ctx, theta, grad); err != nil {
				t.Fatal(err)
			}
			k := slices.IndexFunc(g.Params(), func(p graph.Param) bool { return p.Name == tc.table })
			if k < 0 {
				t.Fatalf("no parameter %q among %v", tc.table, g.Params())
			}
			prm := g.Params()[k]
			nonzero := 0
			for i := prm.Offset; i < prm.Offset+prm.Size; i++ {
				const h = 1e-6
				th := slices.Clone(theta)
				th[i] += h
				up, err := obj.Value(ctx, th)
				if err != nil {
					t.Fatal(err)
				}
				th[i] -= 2 * h
				down, err := obj.Value(ctx, th)
				if err != nil {
					t.Fatal(err)
				}
				fd := (up - down) / (2 * h)
				if math.Abs(fd-grad[i]) > 1e-6*(1+math.Abs(fd)) {
					t.Errorf("%s[%d]: gradient %.10g, central difference %.10g", tc.table, i-prm.Offset, grad[i], fd)
				}
				if grad[i] != 0 {
					nonzero++
				}
			}
			if nonzero == 0 {
				t.Errorf("%s: zero gradient", tc.table)
			}
		})
	}
}

// TestOutputs: a second output is pruned, and a last axis holding a mean
// and a log-variance is never silently audited as horizons.
func TestOutputs(t *testing.T) {
	res, _ := modelioAudit(t, "gauss_two", Options{})
	if res.Model.Horizons != 1 {
		t.Errorf("gauss_two: %d horizons", res.Model.Horizons)
	}
	checkFinite(t, res)

	res, _ = modelioAudit(t, "gauss_cat", Options{})
	if res.Model.Horizons != 2 || !slices.ContainsFunc(res.Setting.Notes, func(n string) bool {
		return strings.HasPrefix(n, "Assumed:") && strings.Contains(n, "--output y:0")
	}) {
		t.Errorf("gauss_cat audited as %d horizons with notes %q: the assumption is not stated", res.Model.Horizons, res.Setting.Notes)
	}
	res, _ = modelioAudit(t, "gauss_cat", Options{Horizons: 2})
	for _, n := range res.Setting.Notes {
		if strings.HasPrefix(n, "Assumed:") {
			t.Errorf("with Horizons 2: note %q", n)
		}
	}

	// --output y:0 audits the mean: one horizon, and the predictions are
	// PyTorch's mu.
	res, fx := modelioAudit(t, "gauss_cat", Options{Output: "y:0"})
	if res.Model.Horizons != 1 {
		t.Fatalf("y:0: %d horizons", res.Model.Horizons)
	}
	for _, n := range res.Setting.Notes {
		if strings.HasPrefix(n, "Assumed:") {
			t.Errorf("with y:0: note %q", n)
		}
	}
	checkFinite(t, res)
	// The fixture holds 4 test sequences of one length T, in file order.
	y := fx.Outputs[0]
	B, T := y.Shape[0], y.Shape[1]
	var seqs []SequenceResult
	for _, s := range res.Sequences {
		if len(s.Steps) == T {
			seqs = append(seqs, s)
		}
	}
	if len(seqs) < B {
		t.Fatalf("%d test sequences of %d rows, fixture has %d", len(seqs), T, B)
	}
	for b := range B {
		for r := range T {
			got, want := seqs[b].Steps[r].Prediction, y.Data[(b*T+r)*2]
			if math.Abs(got-want) > 1e-10 {
				t.Fatalf("sequence %s row %d: prediction %.15g, PyTorch mu %.15g", seqs[b].ID, r, got, want)
			}
		}
	}

	g, _ := loadModelio(t, "gauss_cat", "")
	train, _ := readModelio(t, "gauss_cat")
	for _, tc := range []struct{ out, want string }{
		{"y:2", "column 2"},
		{"mu", `first output is "y"`},
	} {
		if _, err := Run(context.Background(), g, train, nil, &Options{Layout: graph.BatchFirst, Output: tc.out}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Output %q: %v, want %q", tc.out, err, tc.want)
		}
	}
}

// TestManyToOneHorizons: a many-to-one model with H = 3 values (Linear on
// the last hidden state, and a seq2seq decoder fed its own output) reads
// the first T-2 rows of a sequence of T rows and compares value h with
// the target of row T-3+h.
func TestManyToOneHorizons(t *testing.T) {
	// Hand-worked: a sequence of 5 rows with targets 100..104. The model
	// reads rows 0, 1, 2; value 0 forecasts row 2 (target 102), value 1
	// row 3 (103), value 2 row 4 (104).
	g, _ := loadModelio(t, "linear_horizons", "")
	train, _ := readModelio(t, "linear_horizons")
	s := &blocks.Sequence{ID: "hand", Steps: []float64{0, 1, 2, 3, 4}}
	for r := range 5 {
		s.X = append(s.X, []float64{0.1 * float64(r), -0.2 * float64(r)})
		s.Y = append(s.Y, []float64{100 + float64(r)})
	}
	test := &blocks.Dataset{File: "hand.csv", IDCol: "id", TimeCol: "t", Features: train.Features, Targets: train.Targets, Seqs: []*blocks.Sequence{s}}
	// Residuals pooled across rows: by position, the training windows of
	// 8 rows have none at rows 2 to 4, and the audit refuses a test whose
	// every interval would be unbounded (datacheck.NoResiduals).
	res, err := Run(context.Background(), g, train, test, &Options{Layout: graph.BatchFirst, Pooling: PoolRows})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model.Horizons != 3 || !res.Model.ManyToOne {
		t.Fatalf("%d horizons, many-to-one %v", res.Model.Horizons, res.Model.ManyToOne)
	}
	// The model's own output on rows 0..2 of the sequence.
	x := graph.NewFloat([]int{1, 3, 2}, []float64{0, 0, 0.1, -0.2, 0.2, -0.4})
	outs, err := g.Run(nil, []*graph.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	steps := res.Sequences[0].Steps
	if len(steps) != 3 {
		t.Fatalf("%d forecasts, want 3", len(steps))
	}
	for h, st := range steps {
		if st.Row != 2 || st.Horizon != h || st.Target == nil || *st.Target != float64(102+h) {
			t.Errorf("forecast %d: row %d horizon %d target %v; want row 2, horizon %d, target %d", h, st.Row, st.Horizon, st.Target, h, 102+h)
		}
		if math.Abs(st.Prediction-outs[0].F[h]) > 1e-12 {
			t.Errorf("horizon %d: prediction %.15g, the model on rows 0-2 gives %.15g", h, st.Prediction, outs[0].F[h])
		}
	}
	// The value h = 1 forecasts of two equal-length sequences sit h rows
	// after their last rows read.
	if n := res.Summary; n == nil || len(n.CoveragePerHorizon) != 3 || len(n.PointsPerHorizon) != 3 || n.PointsPerHorizon[2] != 1 {
		t.Errorf("per-horizon figures: %+v", n)
	}

	for _, name := range []string{"linear_horizons", "seq2seq"} {
		t.Run(name, func(t *testing.T) {
			res, _ := modelioAudit(t, name, Options{Horizons: 3})
			if res.Model.Horizons != 3 || !res.Model.ManyToOne {
				t.Fatalf("%d horizons, many-to-one %v", res.Model.Horizons, res.Model.ManyToOne)
			}
			for _, n := range res.Setting.Notes {
				if strings.HasPrefix(n, "Assumed:") {
					t.Errorf("with Horizons 3: note %q", n)
				}
			}
			for _, s := range res.Sequences {
				for _, st := range s.Steps {
					if math.IsInf(st.Lower, 0) || math.IsInf(st.Upper, 0) {
						t.Errorf("sequence %s horizon %d: limits [%g, %g]", s.ID, st.Horizon, st.Lower, st.Upper)
					}
				}
			}
			if len(res.Summary.CoveragePerHorizon) != 3 {
				t.Errorf("coverage per horizon %v", res.Summary.CoveragePerHorizon)
			}
			t.Logf("coverage per horizon %.3f, rmse %.3f", res.Summary.CoveragePerHorizon, res.Summary.RMSE)
		})
	}
	// Without Horizons, the assumption is stated.
	res, _ = modelioAudit(t, "linear_horizons", Options{})
	if !slices.ContainsFunc(res.Setting.Notes, func(n string) bool { return strings.Contains(n, "h rows after the last row read") }) {
		t.Errorf("notes %q do not state the horizons assumed", res.Setting.Notes)
	}
	// A sequence shorter than the horizons is named.
	short := *test
	short.Seqs = []*blocks.Sequence{{ID: "short", Steps: []float64{0, 1}, X: s.X[:2], Y: s.Y[:2]}}
	if _, err := Run(context.Background(), g, train, &short, &Options{Layout: graph.BatchFirst}); err == nil || !strings.Contains(err.Error(), "at least 3 rows") {
		t.Errorf("short sequence: %v", err)
	}
}

// TestRescaleBuffers: the buffers of y * std + mean after the last Linear
// are constants, its bias a parameter, and the audit runs.
func TestRescaleBuffers(t *testing.T) {
	g, _ := loadModelio(t, "rescaled", "")
	var params []string
	for _, p := range g.Params() {
		params = append(params, p.Name)
	}
	if slices.Contains(params, "y_mean") || slices.Contains(params, "y_std") || !slices.Contains(params, "head.bias") {
		t.Errorf("parameters %v: want head.bias, not y_mean or y_std", params)
	}
	var consts []string
	for _, c := range g.Constants() {
		consts = append(consts, c.Name)
		if !strings.Contains(c.Reason, "rescales the output of MatMul") {
			t.Errorf("%s: reason %q", c.Name, c.Reason)
		}
	}
	if !slices.Equal(consts, []string{"y_mean", "y_std"}) {
		t.Errorf("constants %v, want y_mean, y_std", consts)
	}
	res, _ := modelioAudit(t, "rescaled", Options{})
	checkFinite(t, res)
	// A model without rescaling keeps every initializer.
	g, _ = loadModelio(t, "linear_horizons", "")
	if c := g.Constants(); len(c) != 0 {
		t.Errorf("linear_horizons: constants %v", c)
	}
}

// TestInseparableSolver: a model that looks up an embedding by codes has
// no one-pass per-sequence gradients, so the low-rank solver is refused
// with a message and Auto never picks it; a plain model keeps it.
func TestInseparableSolver(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inseparable bool
	}{{"embed_cast", true}, {"rescaled", false}} {
		g, _ := loadModelio(t, tc.name, "")
		train, _ := readModelio(t, tc.name)
		o, g, err := validate(g, train, nil, &Options{Layout: graph.BatchFirst})
		if err != nil {
			t.Fatal(err)
		}
		p, err := prepare(o, g, train, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (p.inseparable != nil) != tc.inseparable {
			t.Errorf("%s: inseparable %v", tc.name, p.inseparable)
		}
		_, err = Run(context.Background(), g, train, nil, &Options{Layout: graph.BatchFirst, Solver: LowRank})
		if got := err != nil && strings.Contains(err.Error(), "low-rank solver needs per-sequence gradients"); got != tc.inseparable {
			t.Errorf("%s with the low-rank solver: %v", tc.name, err)
		}
	}
}
