package blocks

import (
	"fmt"
	"slices"
)

// Dataset is a set of sequences read from one file (see "Data" in the
// package documentation).
type Dataset struct {
	File     string      // the file name as given to Read or ReadFile; used in messages
	IDCol    string      // the name of the id column
	TimeCol  string      // the name of the step column
	Features []string    // the d feature column names, in the order of Sequence.X[t]
	Targets  []string    // the target column names, in the order of Sequence.Y[t]; empty for a file without targets
	Shift    int         // Options.Shift: row t's target was read from row t+Shift
	Seqs     []*Sequence // the sequences, in order of the first appearance of their id in the file
	// Windows says where each sequence comes from when the sequences are
	// the sliding windows of long series (CutWindows); nil otherwise.
	Windows *Windowing
}

// Sequence is one sequence of a Dataset: its rows sorted by step.
// Row t (0-based) is the t-th smallest step; t is the "position" that
// blocks, horizons and shifts count in, never the step value itself.
type Sequence struct {
	ID    string    // the id as written in the file, without surrounding spaces
	Steps []float64 // the step values, strictly increasing; Steps[t] is row t's step
	Lines []int     // Lines[t] is the file line of row t (1-based, header = line 1); nil if not read from a file
	// X[t] holds row t's d features, in the order of Dataset.Features.
	// The rows may share one backing array; do not append to them.
	X [][]float64
	// Y[t] holds row t's targets, in the order of Dataset.Targets, or is
	// nil when row t has no target (see HasTarget). Y is nil when the
	// dataset has no targets. Values are finite.
	Y [][]float64
	// Context is the number of rows at the start that only set the
	// model's recurrent state: the rows of a training sequence that this
	// test sequence continues (see Continue). Forecasts of those rows are
	// not evaluated. 0 for a sequence read from a file.
	Context int
	// Head holds, for a file read with a positive shift, the targets of
	// its first Shift rows themselves (nil where a row has none): the
	// targets that the shift gives to the Shift rows before the
	// sequence's first, which Continue gives to the last rows of the
	// training sequence this one continues. Nil otherwise.
	Head [][]float64
}

// Len returns the number of rows (steps) of the sequence.
func (s *Sequence) Len() int { return len(s.X) }

// HasTarget reports whether row t has a target: false for t out of range,
// for a row that a shift left without one, and for every row of a dataset
// without targets. Only rows with a target have loss terms and residuals.
func (s *Sequence) HasTarget(t int) bool {
	return t >= 0 && t < len(s.Y) && s.Y[t] != nil
}

// Len returns the number of sequences.
func (d *Dataset) Len() int { return len(d.Seqs) }

// MaxLen returns the length of the longest sequence (0 for no sequences).
func (d *Dataset) MaxLen() int {
	m := 0
	for _, s := range d.Seqs {
		m = max(m, s.Len())
	}
	return m
}

// Rows returns the total number of rows of all sequences.
func (d *Dataset) Rows() int {
	n := 0
	for _, s := range d.Seqs {
		n += s.Len()
	}
	return n
}

// Labelled reports whether the dataset has target columns. A dataset read
// with Options.OptionalTargets from a file without them has none.
func (d *Dataset) Labelled() bool { return len(d.Targets) > 0 }

// CheckFeatures returns nil when the dataset has n feature columns, the
// number of input features the model takes, and otherwise a *DataError on
// the header line that wraps ErrFeatures, names the feature columns and
// tells how to choose others.
func (d *Dataset) CheckFeatures(n int) error {
	if len(d.Features) == n {
		return nil
	}
	return newDataError(d.File, 1, "", failFix(ErrFeatures, []Option{OptFeatures},
		"the model takes %s, the file has %s (%s): choose the feature columns",
		plural(n, "feature"), plural(len(d.Features), "feature column"),
		listNames(d.Features)))
}

// CheckCompatible returns nil when a test dataset has the same feature
// columns as the training dataset, in the same order, and, if the test
// dataset has targets, the same target columns and shift. Otherwise it
// returns a *DataError about the test file's header that wraps ErrFeatures
// or ErrTargets.
//
// Reading the test file with the training file's columns (Options.Features
// = train.Features, Options.Targets = train.Targets, Options.Shift =
// train.Shift, Options.OptionalTargets = true) makes this check pass or
// makes Read name the missing columns.
func CheckCompatible(train, test *Dataset) error {
	bad := func(kind error, opts []Option, format string, args ...any) error {
		return newDataError(test.File, 1, "", failFix(kind, opts, format, args...))
	}
	if !slices.Equal(train.Features, test.Features) {
		lacks := minus(train.Features, test.Features)
		extra := minus(test.Features, train.Features)
		var what string
		switch {
		case len(lacks) == 0 && len(extra) == 0:
			what = fmt.Sprintf("the file has the feature columns of %s in another order (%s)",
				train.File, listNames(test.Features))
		case len(extra) == 0:
			what = fmt.Sprintf("the file lacks feature %s %s of %s",
				pluralWord(len(lacks), "column"), listNames(lacks), train.File)
		case len(lacks) == 0:
			what = fmt.Sprintf("the file has feature %s %s that %s does not have",
				pluralWord(len(extra), "column"), listNames(extra), train.File)
		default:
			what = fmt.Sprintf("the file lacks feature %s %s of %s and has %s instead",
				pluralWord(len(lacks), "column"), listNames(lacks), train.File, listNames(extra))
		}
		return bad(ErrFeatures, nil, "%s: a test file needs the feature columns of the training file (%s), in that order",
			what, listNames(train.Features))
	}
	if !test.Labelled() {
		return nil
	}
	if !slices.Equal(train.Targets, test.Targets) {
		return bad(ErrTargets, []Option{OptTargets}, "the file has target %s %s, %s has %s: name the same target columns",
			pluralWord(len(test.Targets), "column"), listNames(test.Targets),
			train.File, listNames(train.Targets))
	}
	if train.Shift != test.Shift {
		return bad(ErrTargets, []Option{OptShift}, "the file was read with shift %d, %s with shift %d: use the same shift for both files",
			test.Shift, train.File, train.Shift)
	}
	return nil
}

// minus returns the names of a that are not in b, in the order of a.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// plural returns "1 feature", "2 features".
func plural(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, pluralWord(n, noun))
}

func pluralWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
