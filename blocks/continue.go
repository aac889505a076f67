package blocks

import "slices"

// Continue returns the test set with every sequence that continues a
// training sequence in time (the same id, and a first step after that
// training sequence's last) preceded by the training sequence's rows, so
// that a recurrent model reads the whole history and the test rows start
// from the state the training rows left, instead of from row 0. The rows
// taken from training are the sequence's Context: they set the state and
// are not evaluated. The other sequences are test's own. The result shares
// rows with train and test; continued lists the ids of the continued
// sequences, in test order. When no sequence continues, Continue returns
// test itself. A file read with a shift of k > 0 holds the targets of
// the last k training rows in its first rows (Sequence.Head): the last
// k context rows take them where they have none, so that the model's
// forecast of the first test value, made at the last training row, has
// its target.
func Continue(train, test *Dataset) (out *Dataset, continued []string) {
	byID := make(map[string]*Sequence, len(train.Seqs))
	for _, s := range train.Seqs {
		byID[s.ID] = s
	}
	var seqs []*Sequence
	for k, s := range test.Seqs {
		tr, ok := byID[s.ID]
		if !ok || tr.Len() == 0 || s.Len() == 0 || s.Context > 0 || !(s.Steps[0] > tr.Steps[tr.Len()-1]) {
			continue
		}
		if seqs == nil {
			seqs = slices.Clone(test.Seqs)
		}
		c := &Sequence{ID: s.ID, Context: tr.Len(),
			Steps: concat(tr.Steps, s.Steps), X: concat(tr.X, s.X)}
		if tr.Lines != nil && s.Lines != nil {
			c.Lines = concat(tr.Lines, s.Lines)
		}
		if test.Labelled() {
			c.Y = concat(padded(tr.Y, tr.Len()), s.Y)
			headTargets(c.Y[:tr.Len()], s.Head)
		}
		seqs[k] = c
		continued = append(continued, s.ID)
	}
	if seqs == nil {
		return test, nil
	}
	d := *test
	d.Seqs = seqs
	return &d, continued
}

// concat returns a new slice holding a's elements, then b's.
func concat[T any](a, b []T) []T {
	return append(slices.Clip(slices.Clone(a)), b...)
}

// padded returns y, or n rows without a target when y is nil.
func padded(y [][]float64, n int) [][]float64 {
	if y == nil {
		return make([][]float64, n)
	}
	return y
}

// ContinueOrSelf is Continue without the list of ids.
func ContinueOrSelf(train, test *Dataset) *Dataset {
	d, _ := Continue(train, test)
	return d
}

// headTargets gives the last rows of context y that have no target the
// targets head holds for them (Sequence.Head: head[j] is the target of
// row len(y)-len(head)+j).
func headTargets(y, head [][]float64) {
	for j, v := range head {
		if r := len(y) - len(head) + j; r >= 0 && y[r] == nil && v != nil {
			y[r] = v
		}
	}
}

// ContinueThrough continues both a later stretch of the training series
// and the test set: later (a calibration stretch) continues train
// (Continue), and test continues train joined with later, so that a test
// sequence whose id is in later reads the training rows, then later's,
// and one whose id is only in train reads the training rows. It returns
// later and test continued (nil for a nil test). A nil later is
// Continue's (nil, test continued from train).
func ContinueThrough(train, later, test *Dataset) (*Dataset, *Dataset) {
	if later == nil {
		if test == nil {
			return nil, nil
		}
		return nil, ContinueOrSelf(train, test)
	}
	lc := ContinueOrSelf(train, later)
	byID := make(map[string]*Sequence, len(lc.Seqs))
	for _, s := range lc.Seqs {
		byID[s.ID] = s
	}
	joined := *train
	joined.Seqs = make([]*Sequence, 0, len(train.Seqs)+len(lc.Seqs))
	for _, s := range train.Seqs {
		if c, ok := byID[s.ID]; ok {
			s = c
			delete(byID, s.ID)
		}
		joined.Seqs = append(joined.Seqs, s)
	}
	for _, s := range lc.Seqs {
		if _, ok := byID[s.ID]; ok {
			joined.Seqs = append(joined.Seqs, s)
		}
	}
	if test == nil {
		return lc, nil
	}
	return lc, ContinueOrSelf(&joined, test)
}

// WindowSeries returns the series d's windows were cut from (Windowing),
// or nil when d is nil or not windows.
func (d *Dataset) WindowSeries() *Dataset {
	if d == nil || d.Windows == nil {
		return nil
	}
	return d.Windows.Series
}
