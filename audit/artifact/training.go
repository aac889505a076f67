package artifact

import (
	"errors"
	"fmt"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// Training is what of the training data an artifact keeps so that
// Predict can continue a new sequence that follows a training sequence
// in time (same id, later steps; blocks.Continue), as a full audit does:
// every training sequence's id, steps and input rows, in the training
// file's order, concatenated. The targets are not kept: the rows taken
// from training only set the recurrent state, and their forecasts are
// not evaluated. Size: 8·rows·(features+1) bytes plus the ids.
type Training struct {
	IDs  []string
	Lens []int // rows per sequence
	// Steps holds every row's step, X its features (row-major), the
	// sequences one after another.
	Steps, X []float64
}

// TrainingOf is the Training of the data d, or nil when d holds no
// sequences (a fit loaded without them).
func TrainingOf(d *blocks.Dataset) *Training {
	if d == nil || d.Len() == 0 {
		return nil
	}
	c := &Training{IDs: make([]string, d.Len()), Lens: make([]int, d.Len())}
	rows := d.Rows()
	c.Steps = make([]float64, 0, rows)
	c.X = make([]float64, 0, rows*len(d.Features))
	for i, s := range d.Seqs {
		c.IDs[i], c.Lens[i] = s.ID, s.Len()
		c.Steps = append(c.Steps, s.Steps...)
		for _, x := range s.X {
			c.X = append(c.X, x...)
		}
	}
	return c
}

// Sequences rebuilds the training sequences of c, whose rows have d
// features, refusing lists that disagree (a damaged file).
func (c *Training) Sequences(d int) ([]*blocks.Sequence, error) {
	rows := 0
	for _, n := range c.Lens {
		if n < 0 || n > len(c.Steps)-rows {
			return nil, fmt.Errorf("a training sequence of %d rows: the file is damaged", n)
		}
		rows += n
	}
	if !Finite(c.Steps) || !Finite(c.X) {
		return nil, errors.New("training rows hold a value that is not finite: the file is damaged")
	}
	if len(c.IDs) != len(c.Lens) || len(c.Steps) != rows || len(c.X) != rows*d {
		return nil, fmt.Errorf("training rows: %d ids, %d lengths, %d steps and %d values for %d rows of %d features: the file is damaged",
			len(c.IDs), len(c.Lens), len(c.Steps), len(c.X), rows, d)
	}
	seqs := make([]*blocks.Sequence, len(c.IDs))
	xs := make([][]float64, rows)
	for r := range xs {
		xs[r] = c.X[r*d : (r+1)*d : (r+1)*d]
	}
	off := 0
	for i, id := range c.IDs {
		n := c.Lens[i]
		seqs[i] = &blocks.Sequence{ID: id, Steps: c.Steps[off : off+n : off+n], X: xs[off : off+n : off+n]}
		off += n
	}
	return seqs, nil
}
