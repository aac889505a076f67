package datacheck

import (
	"fmt"
	"slices"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// Windowed is the evidence that the sequences of a data set are
// overlapping windows cut from longer series rather than independent
// sequences: sequence after sequence repeats the rows of the one before
// it, shifted by a few rows. Leaving one such window out leaves its rows
// in its neighbours, so its leave-one-out residual is close to the
// in-sample one and the intervals come out too narrow; the series given
// once, with the window length (audit --window), are audited properly.
type Windowed struct {
	// Repeats is the number of sequences (after the first) whose rows
	// repeat rows of the sequence before them, of Pairs consecutive pairs
	// in file order.
	Repeats, Pairs int
	// Stride is the shift in rows of the first repeat, and Len the length
	// of its windows.
	Stride, Len int
	// First and Second are the ids of the first pair that repeats.
	First, Second string
	// NextValue is the feature column whose value at the next row is
	// every row's target in the windows looked at (the target is the next
	// value of that column), or "".
	NextValue string
}

// DetectWindowed returns the evidence that d's sequences are overlapping
// windows of longer series, or nil: at least 3 sequences, and at least
// half of the consecutive pairs in file order, whose second sequence
// repeats the rows (features) of the first from some row on, over at least
// half the first's rows and two rows.
func DetectWindowed(d *blocks.Dataset) *Windowed {
	w := &Windowed{Pairs: max(d.Len()-1, 0)}
	for i := 1; i < d.Len(); i++ {
		a, b := d.Seqs[i-1], d.Seqs[i]
		s := repeatShift(a, b)
		if s <= 0 {
			continue
		}
		if w.Repeats == 0 {
			w.Stride, w.Len, w.First, w.Second = s, a.Len(), a.ID, b.ID
		}
		w.Repeats++
	}
	if w.Repeats < 3 || 2*w.Repeats < w.Pairs {
		return nil
	}
	w.NextValue = nextValue(d)
	return w
}

// repeatShift returns the smallest s >= 1 such that rows s, s+1, ... of
// a are rows 0, 1, ... of b, over at least half of a's rows and two rows,
// or 0.
func repeatShift(a, b *blocks.Sequence) int {
	n := a.Len()
	for s := 1; n-s >= max(2, (n+1)/2); s++ {
		if n-s > b.Len() || !slices.Equal(a.X[s], b.X[0]) {
			continue
		}
		same := true
		for t := s + 1; t < n && same; t++ {
			same = slices.Equal(a.X[t], b.X[t-s])
		}
		if same {
			return s
		}
	}
	return 0
}

// nextValue returns the feature column j with Y[t][0] = X[t+1][j] at
// every row t but the last of d's first ten sequences, or "".
func nextValue(d *blocks.Dataset) string {
	if !d.Labelled() {
		return ""
	}
	for j, name := range d.Features {
		ok, seen := true, false
		for _, s := range d.Seqs[:min(10, d.Len())] {
			for t := 0; t+1 < s.Len() && ok; t++ {
				if s.HasTarget(t) {
					ok, seen = s.Y[t][0] == s.X[t+1][j], true
				}
			}
		}
		if ok && seen {
			return name
		}
	}
	return ""
}

// Text says what was found, in a sentence a report can print.
func (w *Windowed) Text(file string) string {
	return fmt.Sprintf("%s looks like overlapping windows of longer series, not independent sequences: %d of %d sequences repeat the rows of the sequence before them, shifted (sequence %q, %d rows, from its row %d on is the start of sequence %q); leaving one window out leaves its rows in the windows around it, so the leave-one-out residuals are close to the in-sample ones and the intervals too narrow",
		file, w.Repeats, w.Pairs+1, w.First, w.Len, w.Stride+1, w.Second)
}
