package audit

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// modelIO maps sequences to the model's inputs and the model's first
// output to forecasts (row t, horizon h) per sequence (DESIGN section 1).
type modelIO struct {
	g      *graph.Graph
	layout Layout
	xIn    int // graph input holding the features
	lenIn  int // graph input holding sequence lengths, or -1
	d      int // features
	// perStep: one output per step, [B,T,K] / [T,B,K] (or without K when
	// K = 1); otherwise many-to-one, [B,K] or [B].
	perStep bool
	K       int
	// fixedT is the number of steps the sequence input declares when its
	// time axis is fixed (a loop traced and unrolled for that many steps),
	// else 0: the model then runs only on sequences of exactly fixedT rows.
	fixedT int

	mu    sync.Mutex
	progs map[[2]int]*graph.Program // by (batch, steps)
}

func newModelIO(g *graph.Graph, layout Layout, d int) (*modelIO, error) {
	m := &modelIO{g: g, layout: layout, xIn: -1, lenIn: -1, d: d, progs: map[[2]int]*graph.Program{}}
	var names []string
	for i, in := range g.Inputs {
		names = append(names, fmt.Sprintf("%s %s %s", in.Name, in.Elem, in.ShapeString()))
		dt, _ := in.Elem.DType()
		switch {
		case dt == graph.Float && (in.Dims == nil || len(in.Dims) == 3) && m.xIn < 0:
			m.xIn = i
		case dt == graph.Int && (in.Dims == nil || len(in.Dims) == 1) && m.lenIn < 0:
			m.lenIn = i
		default:
			return nil, fmt.Errorf("audit: the model has an input rnnaudit cannot fill: %s (supported: one float input [batch, time, features] or [time, batch, features], and optionally one integer input of sequence lengths [batch]); its inputs are %s", names[i], strings.Join(names, "; "))
		}
	}
	if m.xIn < 0 {
		return nil, fmt.Errorf("audit: the model has no float input of rank 3 (features over time); its inputs are %s", strings.Join(names, "; "))
	}
	if dims := g.Inputs[m.xIn].Dims; dims != nil && dims[2].Value >= 0 && dims[2].Value != d {
		return nil, errs.Fix([]Option{blocks.OptFeatures}, "audit: the model takes %d features per step (input %q %s), the data has %d feature columns: choose the feature columns the model takes, in its order", dims[2].Value, g.Inputs[m.xIn].Name, g.Inputs[m.xIn].ShapeString(), d)
	}
	if len(g.Outputs) == 0 {
		return nil, fmt.Errorf("audit: the model has no output")
	}
	bf := layout == BatchFirst
	xTime := 0 // the time axis of the sequence input
	if bf {
		xTime = 1
	}
	// Probe the output's shape with 2 sequences of 3 and of 4 steps, or of
	// the fixed number of steps the model declares.
	probe := []int{3, 4}
	if dims := g.Inputs[m.xIn].Dims; dims != nil {
		if T := dims[xTime].Value; T > 0 {
			m.fixedT, probe = T, []int{T, T}
		}
	}
	var shapes [2][]int
	for i, T := range probe {
		outs, err := g.Run(nil, m.inputs(zeroSeqs(2, T, d), T))
		if err != nil {
			return nil, fmt.Errorf("audit: the model does not run on a batch of 2 sequences of %d steps with %d features: %w", T, d, err)
		}
		shapes[i] = outs[0].Shape
	}
	s3, s4 := shapes[0], shapes[1]
	o := g.Outputs[0].Name
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
	switch {
	case timeAxis >= 0 && len(s3) == 3 && ((bf && timeAxis == 1 && s3[0] == 2) || (!bf && timeAxis == 0 && s3[1] == 2)):
		m.perStep, m.K = true, s3[2]
	case timeAxis >= 0 && len(s3) == 2 && ((bf && timeAxis == 1 && s3[0] == 2) || (!bf && timeAxis == 0 && s3[1] == 2)):
		m.perStep, m.K = true, 1
	case timeAxis < 0 && len(s3) == 2 && s3[0] == 2 && s3[1] == 1:
		m.K = 1
	case timeAxis < 0 && len(s3) == 1 && s3[0] == 2:
		m.K = 1
	case timeAxis < 0 && len(s3) == 2 && s3[0] == 2:
		return nil, fmt.Errorf("audit: output %q has shape %v for 2 sequences: a many-to-one model with %d outputs per sequence is not supported (one output per sequence, or one or more per step)", o, s3, s3[1])
	default:
		return nil, errs.Fix([]Option{OptLayout}, "audit: cannot read output %q: it has shape %v for 2 sequences of 3 steps and %v for 4 steps in %s layout; expected [batch, time, horizons], [time, batch, horizons] or [batch, 1]: check the layout", o, s3, s4, layout)
	}
	if m.K < 1 {
		return nil, fmt.Errorf("audit: output %q has no forecasts (shape %v)", o, s3)
	}
	return m, nil
}

// ErrFixedLength is wrapped by the error for data whose sequences do not
// all have the number of steps the model's input fixes.
var ErrFixedLength = errors.New("sequence lengths differ from the model's fixed number of steps")

// checkLengths accepts any data for a model with an open time axis, and
// for a model whose time axis is fixed (a loop traced and unrolled for
// fixedT steps) data whose every sequence has fixedT rows.
func (m *modelIO) checkLengths(sets ...*blocks.Dataset) error {
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
			if len(s.X) == m.fixedT {
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
		in := m.g.Inputs[m.xIn]
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

// inputs builds the model inputs for sequences that all have T rows.
func (m *modelIO) inputs(seqs []*blocks.Sequence, T int) []*graph.Tensor {
	B := len(seqs)
	var x *graph.Tensor
	if m.layout == BatchFirst {
		x = graph.NewFloat([]int{B, T, m.d}, nil)
		for b, s := range seqs {
			for t := 0; t < T; t++ {
				copy(x.F[(b*T+t)*m.d:], s.X[t])
			}
		}
	} else {
		x = graph.NewFloat([]int{T, B, m.d}, nil)
		for b, s := range seqs {
			for t := 0; t < T; t++ {
				copy(x.F[(t*B+b)*m.d:], s.X[t])
			}
		}
	}
	in := make([]*graph.Tensor, len(m.g.Inputs))
	in[m.xIn] = x
	if m.lenIn >= 0 {
		l := graph.NewInt([]int{B}, nil)
		for i := range l.I {
			l.I[i] = int64(T)
		}
		in[m.lenIn] = l
	}
	return in
}

// program returns the compiled program for B sequences of T rows.
func (m *modelIO) program(B, T int, seqs []*blocks.Sequence) (*graph.Program, []*graph.Tensor, error) {
	in := m.inputs(seqs, T)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]int{B, T}
	if p, ok := m.progs[key]; ok {
		return p, in, nil
	}
	p, err := m.g.Compile(in)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: compiling the model for %d sequences of %d steps: %w", B, T, err)
	}
	m.progs[key] = p
	return p, in, nil
}

// exampleAxes is, per model input, the axis that indexes the sequences of
// a batch (hvp.Batch.ExampleAxes).
func (m *modelIO) exampleAxes() []int {
	axes := make([]int, len(m.g.Inputs))
	if m.layout != BatchFirst {
		axes[m.xIn] = 1
	}
	return axes
}

// index is the position in the output of a batch of B sequences of T rows
// of the forecast made at row t for horizon h of batch entry b.
func (m *modelIO) index(B, T, b, t, h int) int {
	switch {
	case !m.perStep:
		return b*m.K + h
	case m.layout == BatchFirst:
		return (b*T+t)*m.K + h
	default:
		return (t*B+b)*m.K + h
	}
}

// forecast is one forecast of a sequence: made at row T for horizon H.
type forecast struct{ T, H int }

// forecasts lists the forecasts the model makes for a sequence of T rows:
// every (t, h) for a per-step model, the last row for a many-to-one one.
func (m *modelIO) forecasts(T int) []forecast {
	if !m.perStep {
		return []forecast{{T - 1, 0}}
	}
	out := make([]forecast, 0, T*m.K)
	for t := 0; t < T; t++ {
		for h := 0; h < m.K; h++ {
			out = append(out, forecast{t, h})
		}
	}
	return out
}
