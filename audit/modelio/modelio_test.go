package modelio

import (
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// The models of testdata (make.py): exported by PyTorch 1.13 as
// practitioners export them, with float64 references. The audit's tests
// audit them too.
const dir = "testdata"

// load loads a model of testdata pruned to output ("" the first), its
// fixture, in onnxtest's format, and the Config of its layout.
func load(t *testing.T, name, output string) (*graph.Graph, *onnxtest.Fixture, Config) {
	t.Helper()
	fx, err := onnxtest.ReadFixture(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := onnx.LoadOutput(filepath.Join(dir, fx.Model), output)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Layout: graph.BatchFirst}
	if fx.Layout == "time-first" {
		c.Layout = graph.TimeFirst
	}
	return g, fx, c
}

// readTrain reads the training data of a model of testdata.
func readTrain(t *testing.T, name string) *blocks.Dataset {
	t.Helper()
	train, err := blocks.ReadFile(filepath.Join(dir, name+"_train.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return train
}

// describe is what fills each input, as "x=x1,x2 x_cat=store,dow".
func describe(m *IO) string {
	var parts []string
	for _, in := range m.Describe() {
		what := strings.Join(in.Columns, ",")
		if in.Lengths {
			what = "lengths"
		}
		parts = append(parts, in.Name+"="+what)
	}
	return strings.Join(parts, " ")
}

var modelioNames = []string{"embed_input", "embed_named", "embed_cast", "gauss_two", "gauss_cat", "linear_horizons", "seq2seq", "rescaled"}

// TestModelioForward runs every model's forecast output on the fixture's
// inputs and compares with PyTorch's float64 output to 1e-10.
func TestModelioForward(t *testing.T) {
	for _, name := range modelioNames {
		t.Run(name, func(t *testing.T) {
			g, fx, _ := load(t, name, "")
			in, err := fx.InputsFor(g)
			if err != nil {
				t.Fatal(err)
			}
			outs, err := g.Run(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			want := fx.Outputs[0]
			if !slices.Equal(outs[0].Shape, want.Shape) {
				t.Fatalf("shape %v, PyTorch %v", outs[0].Shape, want.Shape)
			}
			for i, w := range want.Data {
				if d := math.Abs(outs[0].F[i] - w); d > 1e-10 {
					t.Fatalf("%s[%d] = %.15g, PyTorch %.15g", want.Name, i, outs[0].F[i], w)
				}
			}
		})
	}
}

// TestInputs fills integer inputs of category codes from named columns
// or by their names, and refuses an input it cannot fill or a code that
// is not a whole number with the option that fixes it.
func TestInputs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inputs map[string][]string
		want   string
	}{
		{"embed_input", map[string][]string{"x_cat": {"store", "dow"}}, "x=x1,x2 x_cat=store,dow"},
		{"embed_named", nil, "x=x1,x2 store=store"},
		{"embed_cast", nil, "x=x1,x2,store"},
	} {
		g, _, c := load(t, tc.name, "")
		train := readTrain(t, tc.name)
		c.Inputs = tc.inputs
		m, err := New(g, c, train.Features)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := describe(m); got != tc.want {
			t.Errorf("%s: inputs %s, want %s", tc.name, got, tc.want)
		}
	}

	// Without Inputs, the message names the input and the option, not a
	// feature count.
	g, _, c := load(t, "embed_input", "")
	train := readTrain(t, "embed_input")
	_, err := New(g, c, train.Features)
	var oe *errs.OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "x_cat=COLUMN") || !slices.Contains(oe.Options, optInputs) || strings.Contains(err.Error(), "the file has") {
		t.Errorf("embed_input without Inputs: %v", err)
	}
	// A code that is not a whole number is named with its line.
	c.Inputs = map[string][]string{"x_cat": {"store", "dow"}}
	m, err := New(g, c, train.Features)
	if err != nil {
		t.Fatal(err)
	}
	s := *train.Seqs[0]
	s.X = slices.Clone(s.X)
	s.X[1] = slices.Clone(s.X[1])
	s.X[1][slices.Index(train.Features, "dow")] = 2.5
	if _, _, err := m.Program(1, s.Len(), []*blocks.Sequence{&s}); err == nil || !strings.Contains(err.Error(), `column "dow" holds 2.5`) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("fractional code: %v", err)
	}
}

// TestOutputs: a last axis holding a mean and a log-variance is never
// silently read as horizons, a column of it is chosen with Output, and an
// output or column that does not exist is refused.
func TestOutputs(t *testing.T) {
	g, _, c := load(t, "gauss_two", "")
	train := readTrain(t, "gauss_two")
	if m, err := New(g, c, train.Features); err != nil || m.Horizons() != 1 {
		t.Errorf("gauss_two: %v", err)
	}

	g, _, c = load(t, "gauss_cat", "")
	train = readTrain(t, "gauss_cat")
	assumed := func(m *IO) bool {
		return slices.ContainsFunc(m.Notes(), func(n string) bool { return strings.HasPrefix(n, "Assumed:") && strings.Contains(n, "--output y:0") })
	}
	m, err := New(g, c, train.Features)
	if err != nil || m.Horizons() != 2 || !assumed(m) {
		t.Errorf("gauss_cat read as %d horizons with notes %q (%v): the assumption is not stated", m.Horizons(), m.Notes(), err)
	}
	c2 := c
	c2.Horizons = 2
	if m, err := New(g, c2, train.Features); err != nil || len(m.Notes()) != 0 {
		t.Errorf("with Horizons 2: notes %q, %v", m.Notes(), err)
	}
	c2 = c
	c2.Output = "y:0"
	m, err = New(g, c2, train.Features)
	if err != nil || m.Horizons() != 1 || m.OutputName() != "y:0" || len(m.Notes()) != 0 {
		t.Fatalf("y:0: %v", err)
	}
	// Forecast (row r, horizon 0) of sequence b sits at the mean, value 0
	// of the last axis of [batch, time, 2].
	if got, want := m.Index(3, 5, 1, 2, 0), (1*5+2)*2; got != want {
		t.Errorf("y:0: index %d, want %d", got, want)
	}
	for _, tc := range []struct{ out, want string }{
		{"y:2", "column 2"},
		{"mu", `first output is "y"`},
	} {
		c2.Output = tc.out
		if _, err := New(g, c2, train.Features); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Output %q: %v, want %q", tc.out, err, tc.want)
		}
	}
}

// TestManyToOne: a many-to-one model with 3 values reads the first T-2
// rows of a sequence of T rows and forecasts rows T-3, T-2 and T-1 from
// its last row read; a sequence shorter than the horizons is refused.
func TestManyToOne(t *testing.T) {
	g, _, c := load(t, "linear_horizons", "")
	train := readTrain(t, "linear_horizons")
	m, err := New(g, c, train.Features)
	if err != nil {
		t.Fatal(err)
	}
	if m.PerStep() || m.Horizons() != 3 {
		t.Fatalf("per step %v, %d horizons", m.PerStep(), m.Horizons())
	}
	if !slices.ContainsFunc(m.Notes(), func(n string) bool { return strings.Contains(n, "h rows after the last row read") }) {
		t.Errorf("notes %q do not state the horizons assumed", m.Notes())
	}
	if got, want := m.Forecasts(5), []Forecast{{2, 0}, {2, 1}, {2, 2}}; !slices.Equal(got, want) {
		t.Errorf("forecasts of 5 rows %v, want %v", got, want)
	}
	// The block table's slots of sequences of 6 and 5 rows: by row, then
	// horizon, each forecast once.
	want := map[Forecast]int{{2, 0}: 0, {2, 1}: 1, {2, 2}: 2, {3, 0}: 3, {3, 1}: 4, {3, 2}: 5}
	if got := m.Slots([]int{6, 5, 6}); !maps.Equal(got, want) {
		t.Errorf("slots %v, want %v", got, want)
	}
	for h := range 3 {
		if got := m.Index(2, 5, 1, 2, h); got != 3+h {
			t.Errorf("horizon %d of entry 1: index %d, want %d", h, got, 3+h)
		}
	}
	s := &blocks.Sequence{ID: "short", X: [][]float64{{0, 0}, {1, 1}}, Y: [][]float64{{0}, {1}}}
	if _, _, err := m.Program(1, 2, []*blocks.Sequence{s}); err == nil || !strings.Contains(err.Error(), "at least 3 rows") {
		t.Errorf("short sequence: %v", err)
	}
}

// TestIndexCovers: for every model, the positions Index gives the
// forecasts of Forecasts for every entry of a batch are distinct and
// inside the batch's output.
func TestIndexCovers(t *testing.T) {
	for _, name := range modelioNames {
		g, _, c := load(t, name, "")
		train := readTrain(t, name)
		if name == "embed_input" {
			c.Inputs = map[string][]string{"x_cat": {"store", "dow"}}
		}
		m, err := New(g, c, train.Features)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		const B, T = 3, 6
		seen := map[int]bool{}
		for b := range B {
			for _, f := range m.Forecasts(T) {
				q := m.Index(B, T, b, f.T, f.H)
				if q < 0 || q >= m.OutLen(B, T) || seen[q] {
					t.Errorf("%s: forecast %v of entry %d at %d (output of %d)", name, f, b, q, m.OutLen(B, T))
				}
				seen[q] = true
			}
		}
		if want := B * len(m.Forecasts(T)); len(seen) != want {
			t.Errorf("%s: %d positions, want %d", name, len(seen), want)
		}
	}
}

// TestParseOutput reads output choices.
func TestParseOutput(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string
		col  int
	}{
		{"y", "y", -1}, {"y:0", "y", 0}, {" y:12 ", "y", 12}, {"onnx::Add_3", "onnx::Add_3", -1}, {"out:mu", "out:mu", -1}, {"", "", -1},
	} {
		name, col, err := ParseOutput(tc.in)
		if err != nil || name != tc.name || col != tc.col {
			t.Errorf("ParseOutput(%q) = %q, %d, %v; want %q, %d", tc.in, name, col, err, tc.name, tc.col)
		}
	}
	if _, _, err := ParseOutput("y:-1"); err == nil {
		t.Error("y:-1 accepted")
	}
}

// TestClasses: with Config.Classes the last axis holds a classifier's K
// logits: one forecast per row (per-step [batch, time, K]) or per
// sequence from its last row (many-to-one [batch, K], reading every
// row), at the position of class 0's logit, with no note about horizons;
// an output of one value or a chosen column is refused.
func TestClasses(t *testing.T) {
	g, _, c := load(t, "gauss_cat", "")
	train := readTrain(t, "gauss_cat")
	c.Classes = true
	m, err := New(g, c, train.Features)
	if err != nil {
		t.Fatal(err)
	}
	if m.Classes() != 2 || m.Horizons() != 1 || !m.PerStep() || len(m.Notes()) != 0 || m.OutputName() != "y" {
		t.Fatalf("classes %d, horizons %d, per step %v, notes %q, output %q", m.Classes(), m.Horizons(), m.PerStep(), m.Notes(), m.OutputName())
	}
	if got, want := m.Forecasts(3), []Forecast{{0, 0}, {1, 0}, {2, 0}}; !slices.Equal(got, want) {
		t.Errorf("forecasts of 3 rows %v, want %v", got, want)
	}
	if got, want := m.Index(3, 5, 1, 2, 0), (1*5+2)*2; got != want {
		t.Errorf("index %d, want %d", got, want)
	}
	c.Output = "y:0"
	if _, err := New(g, c, train.Features); err == nil || !strings.Contains(err.Error(), "K >= 2 logits") {
		t.Errorf("a column with Classes: %v", err)
	}
	g, _, c = load(t, "linear_horizons", "")
	c.Classes = true
	if m, err = New(g, c, readTrain(t, "linear_horizons").Features); err != nil {
		t.Fatal(err)
	}
	if m.Classes() != 3 || m.PerStep() || m.rows(5) != 5 {
		t.Fatalf("many-to-one: classes %d, per step %v, rows read of 5: %d", m.Classes(), m.PerStep(), m.rows(5))
	}
	if got, want := m.Forecasts(5), []Forecast{{4, 0}}; !slices.Equal(got, want) {
		t.Errorf("forecasts of 5 rows %v, want %v", got, want)
	}
	if got := m.Index(2, 5, 1, 4, 0); got != 3 {
		t.Errorf("index of entry 1: %d, want 3", got)
	}
	g, _, c = load(t, "gauss_two", "")
	c.Classes = true
	if _, err := New(g, c, readTrain(t, "gauss_two").Features); err == nil || !strings.Contains(err.Error(), "K >= 2 logits") {
		t.Errorf("one value with Classes: %v", err)
	}
}
