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
// test itself.
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
