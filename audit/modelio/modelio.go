// Package modelio says how a data set's columns fill a recurrent model's
// inputs and where each forecast sits in the model's output: which column
// fills which input, how a batch of sequences is laid out, which (row,
// horizon) forecasts a sequence of T rows gets and at what position of the
// output each one is. It compiles and caches the model's programs per
// batch shape. It knows nothing of intervals or audits: the audit asks it
// for inputs, programs and output positions.
package modelio

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// The options an error of this package names as its fix: the fields of
// audit.Options that set Config's, by the names the audit's users know
// (this package does not import audit; the values are audit's own).
const (
	optLayout   errs.Option = "audit.Options.Layout"
	optInputs   errs.Option = "audit.Options.Inputs"
	optOutput   errs.Option = "audit.Options.Output"
	optHorizons errs.Option = "audit.Options.Horizons"
)

// Config says how to read a model: the fields of audit.Options that
// concern its inputs and output.
type Config struct {
	// Layout is the layout of the sequence inputs.
	Layout graph.Layout
	// Inputs names, per model input, the data columns that fill it, in
	// the order the input takes them; inputs not named are filled by
	// rule (see IO).
	Inputs map[string][]string
	// Output is the forecast output, "y" or "y:0" (ParseOutput); ""
	// takes the model's first output whole.
	Output string
	// Horizons is the number of forecasts per row the output must hold;
	// 0 accepts any, with a note when more than one is assumed.
	Horizons int
	// Align says where the H values of a many-to-one output sit (Align
	// values): "" or AlignAfter, after the rows the model reads; AlignLast,
	// the last H rows of the window it reads.
	Align string
	// TargetScale, when set, is {mean, std}: the model was trained on the
	// target scaled as (y - mean) / std, and its forecast output is read
	// as mean + std * output, in the data's units (scale.go).
	TargetScale []float64
	// Classes says the output's last axis holds the K >= 2 logits of a
	// classifier's classes (softmax cross-entropy): one forecast per row
	// (per sequence for a many-to-one output), placed at its class 0's
	// logit, the other K-1 following it (Classes).
	Classes bool
}

// The alignments of a many-to-one output's H values (Config.Align).
const (
	// AlignAfter: the model reads the first T-H+1 of a sequence's T rows
	// and value h forecasts the target of row T-H+h, h rows after the
	// last row read (the default).
	AlignAfter = "after"
	// AlignLast: the model reads all T rows and value h is its estimate
	// of the target of row T-H+h, one of the last H rows it read (a
	// decoder over the window's last H steps).
	AlignLast = "last"
)

// OptAlign is the option that sets Config.Align (audit.Options.Align).
const OptAlign errs.Option = "audit.Options.Align"

// Forecast is one forecast of a sequence: made at row T for horizon H.
type Forecast struct{ T, H int }

// IO maps sequences to the model's inputs and the model's forecast
// output (its first) to forecasts (row t, horizon h) per sequence
// (docs/design.md, section 1).
//
// Every graph input is filled from the data: an integer input of rank 1
// takes the sequence lengths; an input named in Config.Inputs takes those
// columns; an integer (or float) input [batch, time] takes the column of
// its own name; the first float input of rank 3 takes every feature column
// that no other input takes, in file order. Sequence inputs are [batch,
// time, ...] or [time, batch, ...] by the layout.
//
// The output is [batch, time, K] or [batch, time] (one forecast per step:
// value h of row t forecasts the target of row t+h), or [batch, K] or
// [batch] (many-to-one: the model reads the first T-K+1 of a sequence's T
// rows and value h forecasts the target of row T-K+h, h rows after the
// last row read; with Config.Align AlignLast it reads all T rows and value
// h is the target of row T-K+h, one of the last K rows read). Config.Output
// may choose one column of the last axis.
type IO struct {
	g      *graph.Graph
	layout graph.Layout
	fills  []inputFill // per graph input
	main   int         // the float input of features, or -1
	d      int         // columns of the main input
	// perStep: one output per step, [B,T,K] / [T,B,K] (or without K when
	// K = 1); otherwise many-to-one, [B,K] or [B].
	perStep bool
	// readAll: a many-to-one model reads all T rows (Config.Align is
	// AlignLast) rather than the first T-K+1.
	readAll bool
	k       int    // forecasts per row (horizons)
	width   int    // size of the output's last axis (K, or more when col >= 0)
	col     int    // the chosen column of the last axis, or -1
	classes bool   // the last axis holds a classifier's K logits (Config.Classes)
	outName string // the forecast output, "y" or "y:0"
	// notes say what was assumed about the output (horizons nobody named).
	notes []string
	// fixedT is the number of steps the sequence input declares when its
	// time axis is fixed (a loop traced and unrolled for that many steps),
	// else 0: the model then runs only on sequences of exactly fixedT rows
	// read.
	fixedT int
	// fixedB is the batch size the sequence inputs declare when their
	// batch axis is fixed (the tutorial's export), else 0: the model then
	// runs in chunks of fixedB sequences (chunk.go), its graph for a
	// batch of B rewritten once per B into chunked[B].
	fixedB  int
	chunkMu sync.Mutex
	chunked map[int]*graph.Graph

	// valueIn marks the inputs whose values, not only shapes, a compiled
	// program depends on (graph.ValueInputs): category codes.
	valueIn []bool

	mu    sync.Mutex
	progs map[string]*graph.Program // by progKey
	fcs   map[int][]Forecast        // forecasts by sequence length
}

// inputFill says what fills one graph input.
type inputFill struct {
	name    string
	lengths bool     // the sequence lengths, [B]
	cols    []int    // indices into the dataset's feature columns
	names   []string // their names
	integer bool     // an integer tensor: the columns hold category codes
	rank    int      // 2: [B,T] (one column), 3: [B,T,len(cols)]
	static  bool     // [B,len(cols)]: per-sequence values (static.go)
}

// InputInfo says what fills one input of the model: the sequence lengths
// or data columns.
type InputInfo struct {
	Name    string
	Type    string   // "float", "int64", ...
	Lengths bool     // the sequence lengths
	Columns []string // the data columns, in the order the input takes them
	// Static says the input takes one value per sequence from each column
	// (static covariates, [batch, len(Columns)]).
	Static bool `json:",omitempty"`
}

// Horizons is the number of forecasts per row (K).
func (m *IO) Horizons() int { return m.k }

// Classes is K, the number of logits of a classifier's forecast
// (Config.Classes): its forecast's position (Index) is class 0's logit,
// classes 1..K-1 following. It is 0 for any other output.
func (m *IO) Classes() int {
	if !m.classes {
		return 0
	}
	return m.width
}

// PerStep reports whether the model forecasts at every row ([batch,
// time, K] output); otherwise it is many-to-one ([batch, K]).
func (m *IO) PerStep() bool { return m.perStep }

// Features is the number of columns of the model's input of features (or,
// without one, of all its data inputs).
func (m *IO) Features() int { return m.d }

// OutputName is the forecast output as chosen: "y", or "y:0" for a column
// of its last axis.
func (m *IO) OutputName() string { return m.outName }

// Notes say what was assumed about the output (horizons nobody named).
// Callers must not modify them.
func (m *IO) Notes() []string { return m.notes }

// ParseOutput reads a forecast output choice: "y" (the output whole) or
// "y:0" (column 0 of its last axis). col is -1 without a column.
func ParseOutput(s string) (name string, col int, err error) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, ':'); i > 0 && s[i-1] != ':' {
		c, err := strconv.Atoi(s[i+1:])
		if err == nil {
			if c < 0 {
				return "", -1, errs.Fix([]errs.Option{optOutput}, "audit: output %q: the column must not be negative", s)
			}
			return s[:i], c, nil
		}
	}
	return s, -1, nil
}

// horizonNames are dimension names that say an output's last axis holds
// horizons.
var horizonNames = []string{"horizon", "horizons", "h", "lead", "leads", "steps_ahead", "ahead", "n_ahead", "forecast_horizon"}

// New reads the model g for data with the given feature columns: it
// decides what fills each input and runs the model on a probe batch to
// learn its output's form.
func New(g *graph.Graph, o Config, features []string) (*IO, error) {
	if err := CheckTargetScale(o.TargetScale); err != nil {
		return nil, err
	}
	if o.TargetScale != nil && len(g.Outputs) > 0 {
		var err error
		if g, err = withTargetScale(g, o.TargetScale); err != nil {
			return nil, err
		}
	}
	m := &IO{g: g, layout: o.Layout, notes: scaleNote(o.TargetScale), main: -1, col: -1, valueIn: g.ValueInputs(), progs: map[string]*graph.Program{}}
	if err := m.resolveInputs(o.Inputs, features); err != nil {
		return nil, err
	}
	if len(g.Outputs) == 0 {
		return nil, fmt.Errorf("audit: the model has no output")
	}
	oname, col, err := ParseOutput(o.Output)
	if err != nil {
		return nil, err
	}
	out := g.Outputs[0]
	if oname != "" && oname != out.Name {
		var names []string
		for _, v := range g.Outputs {
			names = append(names, fmt.Sprintf("%q", v.Name))
		}
		return nil, errs.Fix([]errs.Option{optOutput}, "audit: the forecast output is %q, but the model's first output is %q (outputs %s): load the model with onnx.LoadOutput", oname, out.Name, strings.Join(names, ", "))
	}
	o1 := out.Name
	bf := m.layout == graph.BatchFirst
	xTime := 0 // the time axis of the sequence input
	if bf {
		xTime = 1
	}
	// Probe the output's shape with 2 sequences of 3 and of 4 steps, or of
	// the fixed number of steps the model declares.
	probe := []int{3, 4}
	if m.main >= 0 {
		if dims := g.Inputs[m.main].Dims; dims != nil {
			if T := dims[xTime].Value; T > 0 {
				m.fixedT, probe = T, []int{T, T}
			}
		}
	}
	if m.fixedB, err = m.fixedBatch(); err != nil {
		return nil, err
	}
	if m.fixedB > 0 {
		in := g.Inputs[max(m.main, 0)]
		how := fmt.Sprintf("on chunks of %d sequences, the last chunk padded with copies of its last sequence, whose outputs are dropped", m.fixedB)
		if m.fixedB == 1 {
			how = "on one sequence at a time"
		}
		m.notes = append(m.notes, fmt.Sprintf("The export fixes the batch size at %d (input %q is declared %s): the model runs %s; the intervals are those of the same model exported with a dynamic batch axis.",
			m.fixedB, in.Name, in.ShapeString(), how))
	}
	var shapes [2][]int
	for i, T := range probe {
		in, err := m.Inputs(zeroSeqs(2, T, len(features)), T, T)
		if err != nil {
			return nil, err
		}
		run, err := m.graphFor(2)
		if err != nil {
			return nil, err
		}
		outs, err := run.Run(nil, in)
		if err != nil {
			return nil, errs.Wrapf(err, "audit: the model does not run on a batch of 2 sequences of %d steps (inputs %s): ", T, m.inputList())
		}
		shapes[i] = outs[0].Shape
	}
	s3, s4 := shapes[0], shapes[1]
	timeAxis := -1
	for a := range s3 {
		if a < len(s4) && s3[a] == 3 && s4[a] == 4 {
			timeAxis = a
		}
	}
	if T := m.fixedT; T > 1 {
		// One length only: the output's time axis is where the input's is.
		if len(s3) >= 2 && s3[xTime] == T {
			timeAxis = xTime
		}
	}
	seqOut := timeAxis >= 0 && ((bf && timeAxis == 1 && s3[0] == 2) || (!bf && timeAxis == 0 && s3[1] == 2))
	switch {
	case seqOut && len(s3) == 3:
		m.perStep, m.width = true, s3[2]
	case seqOut && len(s3) == 2:
		m.perStep, m.width = true, 1
	case timeAxis < 0 && len(s3) == 2 && s3[0] == 2:
		m.width = s3[1]
	case timeAxis < 0 && len(s3) == 1 && s3[0] == 2:
		m.width = 1
	default:
		return nil, errs.Fix([]errs.Option{optLayout}, "audit: cannot read output %q: it has shape %v for 2 sequences of 3 steps and %v for 4 steps in %s layout; expected [batch, time, horizons], [time, batch, horizons], [batch, horizons] or [batch]: check the layout", o1, s3, s4, m.layout)
	}
	if m.width < 1 {
		return nil, fmt.Errorf("audit: output %q has no forecasts (shape %v)", o1, s3)
	}
	m.k = m.width
	switch o.Align {
	case "", AlignAfter:
	case AlignLast:
		if m.perStep {
			return nil, errs.Fix([]errs.Option{OptAlign}, "audit: output %q has one forecast per step (shape %v for 2 sequences of 3 steps): the alignment %q applies only to a many-to-one output [batch, H]; drop it", o1, s3, o.Align)
		}
		m.readAll = true
	default:
		return nil, errs.Fix([]errs.Option{OptAlign}, "audit: alignment %q: choose %q (a many-to-one output's H values forecast the H rows after the window the model reads, the default) or %q (they are the last H rows of the window it reads)", o.Align, AlignAfter, AlignLast)
	}
	if o.Classes {
		if col >= 0 || m.width < 2 {
			return nil, errs.Fix([]errs.Option{optOutput}, "audit: output %q has shape %v for 2 sequences: softmax cross-entropy needs the whole output, its last axis holding the K >= 2 logits of the classes", o1, s3)
		}
		col, m.classes = 0, true
	}
	if col >= 0 {
		if col >= m.width {
			return nil, errs.Fix([]errs.Option{optOutput}, "audit: output %q has %d values per forecast (shape %v for 2 sequences): column %d (of %q) does not exist", o1, m.width, s3, col, o.Output)
		}
		m.col, m.k = col, 1
	}
	m.outName = o1
	if m.col >= 0 && !m.classes {
		m.outName = fmt.Sprintf("%s:%d", o1, m.col)
	}
	if o.Horizons > 0 && o.Horizons != m.k {
		return nil, errs.Fix([]errs.Option{optHorizons}, "audit: output %q holds %d values per forecast (shape %v for 2 sequences), not the %d horizons asked for", o1, m.k, s3, o.Horizons)
	}
	if m.k > 1 && o.Horizons == 0 && !namesHorizons(out) {
		what := fmt.Sprintf("value h of row t forecasting the target of row t+h (h = 0..%d)", m.k-1)
		if !m.perStep {
			what = fmt.Sprintf("read from the first T-%d rows of a sequence of T rows, value h forecasting the target of row T-%d+h, h rows after the last row read", m.k-1, m.k)
			if m.readAll {
				what = fmt.Sprintf("read from all T rows of a sequence, value h estimating the target of row T-%d+h, one of the last %d rows read", m.k, m.k)
			}
		}
		m.notes = append(m.notes, fmt.Sprintf("Assumed: the last axis of output %q (%d values) holds %d forecast horizons, %s. Nothing in the model says so: if it holds something else, such as a mean and a log-variance, name the forecast's column (--output %s:0); if it does hold horizons, say so with --horizons %d.",
			o1, m.k, m.k, what, o1, m.k))
	}
	return m, nil
}

// namesHorizons reports whether the export names the last axis of output
// v as one of horizons (dynamic_axes {"y": {2: "horizon"}}).
func namesHorizons(v graph.ValueInfo) bool {
	if len(v.Dims) < 2 {
		return false
	}
	return slices.Contains(horizonNames, strings.ToLower(v.Dims[len(v.Dims)-1].Name))
}

// FeatureCount is the number of features per step of a model whose only
// data input is one float input of known width filled with every feature
// column; ok is false for other models, whose inputs New checks
// one by one. inputs are Config.Inputs. The data's own check (blocks.Dataset.CheckFeatures) then
// names the file and the --features flag.
func FeatureCount(g *graph.Graph, inputs map[string][]string) (n int, ok bool) {
	if len(inputs) > 0 {
		return 0, false
	}
	for _, in := range g.Inputs {
		dt, _ := in.Elem.DType()
		switch {
		case dt == graph.Int && len(in.Dims) == 1:
		case dt == graph.Float && len(in.Dims) == 3 && in.Dims[2].Value >= 0 && !ok:
			n, ok = in.Dims[2].Value, true
		default:
			return 0, false
		}
	}
	return n, ok
}

// resolveInputs decides what fills every graph input (see IO).
func (m *IO) resolveInputs(given map[string][]string, features []string) error {
	g := m.g
	m.fills = make([]inputFill, len(g.Inputs))
	var names []string
	for _, in := range g.Inputs {
		names = append(names, fmt.Sprintf("%s %s %s", in.Name, in.Elem, in.ShapeString()))
	}
	known := map[string]bool{}
	for _, in := range g.Inputs {
		known[in.Name] = true
	}
	for name := range given {
		if !known[name] {
			return errs.Fix([]errs.Option{optInputs}, "audit: the model has no input %q: its inputs are %s", name, strings.Join(names, "; "))
		}
	}
	colIndex := func(input, c string) (int, error) {
		i := slices.Index(features, c)
		if i < 0 {
			return 0, errs.Fix([]errs.Option{optInputs}, "audit: input %q: column %q is not among the columns read (%s): name the columns of the data file", input, c, strings.Join(features, ", "))
		}
		return i, nil
	}
	taken := map[string]string{} // column -> input
	lengths := false
	mainGiven := false // the input of features is named in given
	// First the inputs that are named or filled by rule, then the float
	// input of features with what is left.
	for i, in := range g.Inputs {
		dt, _ := in.Elem.DType()
		f := inputFill{name: in.Name, integer: dt == graph.Int, rank: len(in.Dims)}
		cols, ok := given[in.Name]
		switch {
		case ok:
			if f.rank != 0 && f.rank != 2 && f.rank != 3 {
				return fmt.Errorf("audit: input %s cannot be filled from data columns: a sequence input is [batch, time] or [batch, time, columns]", names[i])
			}
			if f.rank == 0 {
				f.rank = 3
			}
			if S, static := StaticWidth(g, in); static {
				if err := staticFill(&f, names[i], S, cols); err != nil {
					return errs.Fix([]errs.Option{optInputs}, "%w", err)
				}
			} else if f.rank == 2 && len(cols) != 1 {
				return errs.Fix([]errs.Option{optInputs}, "audit: input %s takes one column per step (its second axis is the time axis), %d are named (%s); an input of per-sequence values (static covariates) is declared [batch, S] with S fixed", names[i], len(cols), strings.Join(cols, ", "))
			}
			if dt == graph.Float && f.rank == 3 && m.main < 0 {
				m.main, mainGiven = i, true
			}
		case dt == graph.Int && f.rank <= 1 && !lengths:
			f.lengths, lengths = true, true
			m.fills[i] = f
			continue
		case f.rank == 2 && slices.Contains(features, in.Name):
			cols = []string{in.Name}
			if S, static := StaticWidth(g, in); static {
				if err := staticFill(&f, names[i], S, cols); err != nil {
					return errs.Fix([]errs.Option{optInputs}, "%w", err)
				}
			}
		case f.rank == 2 && isStatic(g, in):
			S, _ := StaticWidth(g, in)
			return errs.Fix([]errs.Option{optInputs}, "audit: the model's input %s takes %d per-sequence values (static covariates) and no column is named for it: name its columns, in the order the model takes them, as %s=A,B,... (each holding one value per sequence, repeated on every row), or name a data column %q when it takes one; the model's inputs are %s", names[i], S, in.Name, in.Name, strings.Join(names, "; "))
		case dt == graph.Float && (f.rank == 3 || in.Dims == nil) && m.main < 0:
			f.rank = 3
			m.main = i
			m.fills[i] = f
			continue
		case dt == graph.Int && (f.rank == 2 || f.rank == 3):
			return errs.Fix([]errs.Option{optInputs}, "audit: the model's input %s takes category codes and no column is named for it: name its columns, in the order the model takes them, as %s=COLUMN,..., or name a data column %q; the model's inputs are %s", names[i], in.Name, in.Name, strings.Join(names, "; "))
		default:
			return errs.Fix([]errs.Option{optInputs}, "audit: the model has an input rnnaudit cannot fill: %s (supported: a float input [batch, time, features] or [time, batch, features], integer inputs [batch, time] or [batch, time, k] of category codes filled from named columns, and an integer input of sequence lengths [batch]); its inputs are %s", names[i], strings.Join(names, "; "))
		}
		for _, c := range cols {
			k, err := colIndex(in.Name, c)
			if err != nil {
				return err
			}
			if other, dup := taken[c]; dup && other == in.Name {
				return fmt.Errorf("audit: input %q: column %q is named twice", in.Name, c)
			}
			taken[c] = in.Name
			f.cols, f.names = append(f.cols, k), append(f.names, c)
		}
		m.fills[i] = f
	}
	if m.main >= 0 && !mainGiven {
		f := &m.fills[m.main]
		for k, c := range features {
			if _, ok := taken[c]; !ok {
				f.cols, f.names = append(f.cols, k), append(f.names, c)
			}
		}
		if len(f.cols) == 0 {
			return fmt.Errorf("audit: no data column is left for the model's input %s: every column fills another input (%s)", names[m.main], m.inputList())
		}
	}
	for i, in := range g.Inputs {
		f := m.fills[i]
		if f.lengths || f.rank != 3 || in.Dims == nil {
			continue
		}
		if want := in.Dims[2].Value; want >= 0 && want != len(f.cols) {
			how := fmt.Sprintf("name its columns, in the order the model takes them, as %s=A,B,...", in.Name)
			opts := []errs.Option{optInputs}
			if i == m.main {
				how = "choose the feature columns the model takes, in its order, and name the columns of any other input"
				opts = []errs.Option{blocks.OptFeatures, optInputs}
			}
			what, fill := "values", "columns fill"
			if i == m.main {
				what = "features"
			}
			if len(f.cols) == 1 {
				fill = "column fills"
			}
			return errs.Fix(opts, "audit: the model's input %s takes %d %s per step, but %d %s it (%s): %s; the model's inputs are filled as %s",
				names[i], want, what, len(f.cols), fill, strings.Join(f.names, ", "), how, m.inputList())
		}
	}
	for i := range m.fills {
		if f := m.fills[i]; f.rank == 3 && !f.lengths && i == m.main {
			m.d = len(f.cols)
		}
	}
	if m.main < 0 {
		for i := range m.fills {
			if !m.fills[i].lengths {
				m.d += len(m.fills[i].cols)
			}
		}
	}
	return nil
}

// inputList says what fills each input, for messages: "x ← x1, x2; x_cat ←
// store, dow; lengths ← the sequence lengths".
func (m *IO) inputList() string {
	var parts []string
	for _, in := range m.Describe() {
		what := strings.Join(in.Columns, ", ")
		if in.Lengths {
			what = "the sequence lengths"
		}
		if what == "" {
			what = "(nothing yet)"
		}
		parts = append(parts, in.Name+" ← "+what)
	}
	return strings.Join(parts, "; ")
}

// Describe is the result's account of what fills each input.
func (m *IO) Describe() []InputInfo {
	out := make([]InputInfo, len(m.fills))
	for i, f := range m.fills {
		out[i] = InputInfo{Name: m.g.Inputs[i].Name, Type: m.g.Inputs[i].Elem.String(), Lengths: f.lengths, Columns: f.names, Static: f.static}
	}
	return out
}

// ErrFixedLength is wrapped by the error for data whose sequences do not
// all have the number of steps the model's input fixes.
var ErrFixedLength = errors.New("sequence lengths differ from the model's fixed number of steps")

// CheckLengths checks data against what the model's inputs fix: a model
// with an open time axis takes sequences of any length, one whose time
// axis is fixed (a loop traced and unrolled for fixedT steps) only
// sequences of fixedT rows read; and the columns that fill an input of
// per-sequence values (static covariates) must hold one value per
// sequence.
func (m *IO) CheckLengths(sets ...*blocks.Dataset) error {
	for _, ds := range sets {
		if ds == nil {
			continue
		}
		if err := m.checkStatic(ds); err != nil {
			return err
		}
	}
	if m.fixedT == 0 {
		return nil
	}
	for _, ds := range sets {
		if ds == nil {
			continue
		}
		var bad []string
		n := 0
		for _, s := range ds.Seqs {
			if m.rows(len(s.X)) == m.fixedT {
				continue
			}
			if n++; n <= 3 {
				bad = append(bad, fmt.Sprintf("%q has %d", s.ID, len(s.X)))
			}
		}
		if n == 0 {
			continue
		}
		if n > 3 {
			bad = append(bad, "...")
		}
		in := m.g.Inputs[m.main]
		if extra := m.rows(ds.MaxLen()) == m.fixedT+1; extra && n == len(ds.Seqs) {
			return fmt.Errorf("audit: %w: the model runs only on windows of exactly %d steps (input %q is declared %s), and every sequence of %s has one row more: if that row holds the window's target, put the target on the window's last row (the row the output forecasts; an empty target cell means no label) and delete the extra row, which the model would otherwise read as its input",
				ErrFixedLength, m.fixedT, in.Name, in.ShapeString(), ds.File)
		}
		return fmt.Errorf("audit: %w: the model runs only on sequences of exactly %d steps (input %q is declared %s, as when a Python loop is traced: it is unrolled for the trace's length), but %d of the %d sequences of %s have other lengths (%s). Audit it on sequences of %d steps, or export a model whose recurrence is not unrolled (nn.RNN, nn.LSTM or nn.GRU, or a torch.jit.script-ed loop) with dynamic axes",
			ErrFixedLength, m.fixedT, in.Name, in.ShapeString(), n, len(ds.Seqs), ds.File, strings.Join(bad, ", "), m.fixedT)
	}
	return nil
}

// zeroSeqs returns n sequences of T steps of d zero features.
func zeroSeqs(n, T, d int) []*blocks.Sequence {
	out := make([]*blocks.Sequence, n)
	for i := range out {
		x := make([][]float64, T)
		for t := range x {
			x[t] = make([]float64, d)
		}
		out[i] = &blocks.Sequence{X: x}
	}
	return out
}

// rows is the number of rows of a sequence of T rows that the model
// reads: all for a per-step model and for a many-to-one one whose values
// are the last K rows read (AlignLast), all but the last K-1 for another
// many-to-one one (they hold the targets of its later horizons).
func (m *IO) rows(T int) int {
	if m.perStep || m.readAll {
		return T
	}
	return T - m.k + 1
}

// Inputs builds the model inputs from the first n rows of sequences that
// all have T rows. An integer input takes category codes: its columns
// must hold whole numbers.
func (m *IO) Inputs(seqs []*blocks.Sequence, T, n int) ([]*graph.Tensor, error) {
	B := len(seqs)
	in := make([]*graph.Tensor, len(m.g.Inputs))
	for i, f := range m.fills {
		if f.lengths {
			l := graph.NewInt([]int{B}, nil)
			for k := range l.I {
				l.I[k] = int64(n)
			}
			in[i] = l
			continue
		}
		if f.static {
			t, err := f.staticInput(seqs)
			if err != nil {
				return nil, err
			}
			in[i] = t
			continue
		}
		c := len(f.cols)
		shape := []int{B, n, c}
		if m.layout != graph.BatchFirst {
			shape = []int{n, B, c}
		}
		if f.rank == 2 {
			shape = shape[:2]
		}
		var t *graph.Tensor
		if f.integer {
			t = graph.NewInt(shape, nil)
		} else {
			t = graph.NewFloat(shape, nil)
		}
		for b, s := range seqs {
			for r := 0; r < n; r++ {
				at := (b*n + r) * c
				if m.layout != graph.BatchFirst {
					at = (r*B + b) * c
				}
				for j, k := range f.cols {
					v := s.X[r][k]
					if !f.integer {
						t.F[at+j] = v
						continue
					}
					if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
						where := fmt.Sprintf("row %d", r)
						if s.Lines != nil {
							where = fmt.Sprintf("line %d", s.Lines[r])
						}
						return nil, fmt.Errorf("audit: sequence %q, %s: column %q holds %v, but it fills the model's integer input %q (category codes): it must hold whole numbers", s.ID, where, f.names[j], v, f.name)
					}
					t.I[at+j] = int64(v)
				}
			}
		}
		in[i] = t
	}
	return in, nil
}

// Program returns the compiled program for B sequences of T rows and
// their inputs.
func (m *IO) Program(B, T int, seqs []*blocks.Sequence) (*graph.Program, []*graph.Tensor, error) {
	n := m.rows(T)
	if m.readAll && T < m.k {
		return nil, nil, fmt.Errorf("audit: a sequence has %d rows: the model's %d values are the last %d rows it reads, so every sequence needs at least %d rows", T, m.k, m.k, m.k)
	}
	if n < 1 {
		return nil, nil, fmt.Errorf("audit: a sequence has %d rows: the model forecasts %d horizons from its last row read, so every sequence needs at least %d rows (the last %d hold only targets)", T, m.k, m.k, m.k-1)
	}
	in, err := m.Inputs(seqs, T, n)
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := m.progKey(B, T, in)
	if p, ok := m.progs[key]; ok {
		return p, in, nil
	}
	run, err := m.graphFor(B)
	if err != nil {
		return nil, nil, err
	}
	p, err := run.Compile(in)
	if err != nil {
		return nil, nil, errs.Wrapf(err, "audit: compiling the model for %d sequences of %d steps: ", B, n)
	}
	m.progs[key] = p
	return p, in, nil
}

// progKey identifies a compiled program: the batch size and rows, and the
// values of the inputs the program depends on (category codes; sequence
// lengths are T).
func (m *IO) progKey(B, T int, in []*graph.Tensor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d,%d", B, T)
	for i, t := range in {
		if !m.valueIn[i] || m.fills[i].lengths {
			continue
		}
		b.WriteByte('|')
		for _, v := range t.I {
			b.WriteString(strconv.FormatInt(v, 36))
			b.WriteByte(',')
		}
		for _, v := range t.F {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
			b.WriteByte(',')
		}
	}
	return b.String()
}

// ExampleAxes is, per model input, the axis that indexes the sequences of
// a batch (hvp.Batch.ExampleAxes).
func (m *IO) ExampleAxes() []int {
	axes := make([]int, len(m.g.Inputs))
	if m.layout != graph.BatchFirst {
		for i, f := range m.fills {
			if !f.lengths && !f.static {
				axes[i] = 1
			}
		}
	}
	return axes
}

// OutLen is the length of the output of a batch of B sequences of T rows.
func (m *IO) OutLen(B, T int) int {
	if m.perStep {
		return B * T * m.width
	}
	return B * m.width
}

// Index is the position in the output of a batch of B sequences of T rows
// of the forecast made at row t for horizon h of batch entry b.
func (m *IO) Index(B, T, b, t, h int) int {
	if m.col >= 0 {
		h = m.col
	}
	switch {
	case !m.perStep:
		return b*m.width + h
	case m.layout == graph.BatchFirst:
		return (b*T+t)*m.width + h
	default:
		return (t*B+b)*m.width + h
	}
}

// Forecasts lists the forecasts the model makes for a sequence of T rows:
// every (t, h) for a per-step model; for a many-to-one one, every horizon
// from the last row read, T-K. The list is made once per T and shared:
// callers read it and never modify it (the per-sequence loops of every
// phase ask for it, about a hundred bytes each time).
func (m *IO) Forecasts(T int) []Forecast {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fs, ok := m.fcs[T]; ok {
		return fs
	}
	if m.fcs == nil {
		m.fcs = map[int][]Forecast{}
	}
	fs := slices.Clip(m.listForecasts(T))
	m.fcs[T] = fs
	return fs
}

// listForecasts makes the list Forecasts returns.
func (m *IO) listForecasts(T int) []Forecast {
	if !m.perStep {
		out := make([]Forecast, 0, m.k)
		for h := 0; h < m.k; h++ {
			out = append(out, Forecast{T - m.k, h})
		}
		return out
	}
	out := make([]Forecast, 0, T*m.k)
	for t := 0; t < T; t++ {
		for h := 0; h < m.k; h++ {
			out = append(out, Forecast{t, h})
		}
	}
	return out
}

// ForecastRows lists the rows t+h whose targets the forecasts of a
// sequence of T rows are compared with, in the order of Forecasts.
func (m *IO) ForecastRows(T int) []int {
	fs := m.Forecasts(T)
	out := make([]int, len(fs))
	for i, f := range fs {
		out[i] = f.T + f.H
	}
	return out
}

// Slots numbers the forecasts of sequences of the lengths lens, by row
// then horizon: the columns of the low-rank path's block table of
// residuals. A point pairs with the residuals at its own forecast (row,
// horizon), as on the exact path's residual entries.
func (m *IO) Slots(lens []int) map[Forecast]int {
	seen := map[Forecast]bool{}
	var fs []Forecast
	for _, T := range lens {
		for _, f := range m.Forecasts(T) {
			if !seen[f] {
				seen[f] = true
				fs = append(fs, f)
			}
		}
	}
	slices.SortFunc(fs, byRow)
	out := make(map[Forecast]int, len(fs))
	for i, f := range fs {
		out[f] = i
	}
	return out
}

// SortedKeys are the forecasts keying m, by row, then horizon.
func SortedKeys[V any](m map[Forecast]V) []Forecast {
	keys := make([]Forecast, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, byRow)
	return keys
}

// byRow orders forecasts by row, then horizon.
func byRow(a, b Forecast) int {
	if a.T != b.T {
		return a.T - b.T
	}
	return a.H - b.H
}
