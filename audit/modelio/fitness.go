package modelio

import (
	"math"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// RMSE is the root mean squared error of the model's forecasts, read
// through m, against the first target of the first (at most limit)
// sequences of seqs, one sequence at a time, with the number of targets
// it ran over (0, and NaN, when none of those sequences has a target
// where the model forecasts). It tells which of a model's outputs is the
// forecast its training fitted to these targets.
func (m *IO) RMSE(seqs []*blocks.Sequence, limit int) (rmse float64, n int, err error) {
	var ss float64
	for i, s := range seqs {
		if i == limit {
			break
		}
		T := s.Len()
		if T == 0 || s.Y == nil || (m.fixedT > 0 && T != m.fixedT) || m.rows(T) < 1 {
			continue
		}
		in, err := m.Inputs([]*blocks.Sequence{s}, T, m.rows(T))
		if err != nil {
			return math.NaN(), 0, err
		}
		outs, err := m.g.Run(nil, in)
		if err != nil {
			return math.NaN(), 0, err
		}
		fx := outs[0].F
		for _, f := range m.Forecasts(T) {
			row := f.T + f.H
			q := m.Index(1, T, 0, f.T, f.H)
			if row >= T || s.Y[row] == nil || q >= len(fx) {
				continue
			}
			d := fx[q] - s.Y[row][0]
			ss += d * d
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0, nil
	}
	return math.Sqrt(ss / float64(n)), n, nil
}
