package modelio

import (
	"fmt"
	"math"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// Static covariates: a model input [batch, S] of per-sequence values (age,
// sex, a patient's baseline labs) filled from S data columns that hold one
// value per sequence, repeated on each of its rows.

// StaticWidth says whether input in of g takes per-sequence values (static
// covariates) and how many: a float or integer input of rank 2 whose
// second axis is fixed to S (declared [batch, S]). An input [batch, time]
// whose number of steps the export fixes to the same value as the
// sequence input's is a per-step input, not a static one. The audit and
// `audit inspect` both decide by this rule.
func StaticWidth(g *graph.Graph, in graph.ValueInfo) (S int, ok bool) {
	if len(in.Dims) != 2 || in.Dims[1].Value < 1 {
		return 0, false
	}
	S = in.Dims[1].Value
	for _, x := range g.Inputs {
		if dt, _ := x.Elem.DType(); dt == graph.Float && len(x.Dims) == 3 && (x.Dims[0].Value == S || x.Dims[1].Value == S) {
			return 0, false // [batch, time] with the sequence input's fixed number of steps
		}
	}
	return S, true
}

// isStatic reports whether input in of g takes per-sequence values
// (StaticWidth).
func isStatic(g *graph.Graph, in graph.ValueInfo) bool {
	_, ok := StaticWidth(g, in)
	return ok
}

// staticFill sets up f, the fill of static input in of width S (0 when the
// declared shape does not say) from the columns cols.
func staticFill(f *inputFill, desc string, S int, cols []string) error {
	if S > 0 && len(cols) != S {
		return fmt.Errorf("audit: input %s takes %d per-sequence values (static covariates), but %d columns are named (%s): name %d columns, in the order the model takes them",
			desc, S, len(cols), strings.Join(cols, ", "), S)
	}
	f.static = true
	return nil
}

// checkStatic reports the first sequence of ds in which a column that
// fills a per-sequence input varies, naming the sequence, the column and
// the two rows (file lines when known) that differ.
func (m *IO) checkStatic(ds *blocks.Dataset) error {
	for _, f := range m.fills {
		if !f.static {
			continue
		}
		for _, s := range ds.Seqs {
			if err := f.constant(s, ds.File); err != nil {
				return err
			}
		}
	}
	return nil
}

// constant checks that every column of static fill f holds one value on
// every row of sequence s (of file, for the message).
func (f *inputFill) constant(s *blocks.Sequence, file string) error {
	if len(s.X) == 0 {
		return nil
	}
	for j, k := range f.cols {
		v0 := s.X[0][k]
		for r := 1; r < len(s.X); r++ {
			if v := s.X[r][k]; v != v0 {
				where := func(r int) string {
					if s.Lines != nil {
						return fmt.Sprintf("line %d", s.Lines[r])
					}
					return fmt.Sprintf("row %d", r)
				}
				of := ""
				if file != "" {
					of = " of " + file
				}
				return fmt.Errorf("audit: sequence %q%s: column %q fills the model's input %q of per-sequence values (static covariates), but it varies within the sequence: %v at %s, %v at %s; give each sequence one value of %q, repeated on every row",
					s.ID, of, f.names[j], f.name, v0, where(0), v, where(r), f.names[j])
			}
		}
	}
	return nil
}

// staticInput is the input [B, S] of static fill f for a batch of
// sequences: each sequence's value of each column, refused when it varies
// within the sequence.
func (f *inputFill) staticInput(seqs []*blocks.Sequence) (*graph.Tensor, error) {
	c := len(f.cols)
	var t *graph.Tensor
	if f.integer {
		t = graph.NewInt([]int{len(seqs), c}, nil)
	} else {
		t = graph.NewFloat([]int{len(seqs), c}, nil)
	}
	for b, s := range seqs {
		if err := f.constant(s, ""); err != nil {
			return nil, err
		}
		for j, k := range f.cols {
			v := 0.0
			if len(s.X) > 0 {
				v = s.X[0][k]
			}
			if !f.integer {
				t.F[b*c+j] = v
				continue
			}
			if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				return nil, fmt.Errorf("audit: sequence %q: column %q holds %v, but it fills the model's integer input %q of per-sequence values (category codes): it must hold whole numbers", s.ID, f.names[j], v, f.name)
			}
			t.I[b*c+j] = int64(v)
		}
	}
	return t, nil
}
