package blocks

import (
	"fmt"
	"strings"
)

// Kind is a block scheme (docs/design.md, section 3). The zero value is
// Sequences.
type Kind int

// The block schemes.
const (
	// Sequences: block i holds every loss term of sequence i.
	Sequences Kind = iota
	// Intervals: block j holds the loss terms whose target row is in
	// [jK, (j+1)K), in every sequence.
	Intervals
	// Nested: block (i, j) is the union of sequence i and interval j; its
	// evaluation region is their intersection.
	Nested
	// Windows: over the sliding windows of long series (CutWindows),
	// block (s, j) has in its evaluation region the windows of series s
	// whose last row read is in the stretch [jK, (j+1)K) of its rows, and
	// deletes every window that uses a row of the stretch (Künsch's block
	// jackknife over windows).
	Windows
)

// String returns "sequence", "interval" or "nested", the names ParseKind
// accepts, or "window" (window blocks follow from the windows of a
// dataset, not from a name).
func (k Kind) String() string {
	switch k {
	case Sequences:
		return "sequence"
	case Intervals:
		return "interval"
	case Nested:
		return "nested"
	case Windows:
		return "window"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind returns the scheme named s: "sequence", "interval" or "nested"
// (a plural and any case are accepted). Otherwise the error wraps ErrScheme.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "sequence", "sequences":
		return Sequences, nil
	case "interval", "intervals":
		return Intervals, nil
	case "nested":
		return Nested, nil
	}
	return 0, fmt.Errorf("blocks: %w", fail(ErrScheme, "unknown block scheme %q: choose sequence, interval or nested", s))
}

// Block is one block of a scheme: a set of loss terms deleted together, and
// the region where its leave-one-block-out residuals are evaluated. Loss
// term (i, t, h) is the forecast made at row t of sequence i for horizon h,
// compared with the target of row r = t+h; interval membership is decided
// by r (see "Blocks" in the package documentation).
//
// A Block is a small value; the zero Block is sequence block 0 with an
// empty label. Blocks built by NewScheme satisfy the field comments.
type Block struct {
	Kind     Kind
	Seq      int // 0-based index into Dataset.Seqs; -1 for an interval block
	Interval int // 0-based interval index j; -1 for a sequence block
	// Lo and Hi bound the interval's rows [Lo, Hi): Lo = jK and Hi =
	// min((j+1)K, MaxLen) for the training set's longest sequence. Both
	// are 0 for a sequence block. For a window block (Seq and Interval
	// -1) they bound the windows [Lo, Hi) of its evaluation region, and
	// DelLo and DelHi the windows [DelLo, DelHi) it deletes: sequences
	// of the dataset of windows.
	Lo, Hi       int
	DelLo, DelHi int
	// Label names the block for people, counting sequences and steps from
	// 1: "sequence 17 (id P017)", "steps 11–15", "sequence 3 (id P3) ×
	// steps 6–10". Steps are positions in the sequence; when all sequences
	// agree on their step values, those follow in parentheses, as in
	// "steps 11–15 (t = 10–14)".
	Label string
}

// Span is a run of rows [Lo, Hi) of sequence Seq (0-based, Lo < Hi).
type Span struct {
	Seq, Lo, Hi int
}

// String returns the block's label, or a generic one if it has none.
func (b Block) String() string {
	if b.Label != "" {
		return b.Label
	}
	switch b.Kind {
	case Sequences:
		return fmt.Sprintf("sequence %d", b.Seq+1)
	case Intervals:
		return stepsLabel(b.Lo, b.Hi)
	}
	return fmt.Sprintf("sequence %d × %s", b.Seq+1, stepsLabel(b.Lo, b.Hi))
}

// inInterval reports whether row r is in the block's interval.
func (b Block) inInterval(r int) bool { return b.Lo <= r && r < b.Hi }

// Deletes reports whether deleting the block removes loss term (i, t, h):
// the forecast at row t of sequence i for horizon h, compared with the
// target of row t+h. It does not check that the term exists (that row t+h
// of sequence i has a target).
//
//	Sequences: i = Seq
//	Intervals: Lo <= t+h < Hi
//	Nested:    i = Seq or Lo <= t+h < Hi
func (b Block) Deletes(i, t, h int) bool {
	switch b.Kind {
	case Sequences:
		return i == b.Seq
	case Intervals:
		return b.inInterval(t + h)
	case Windows:
		return b.DelLo <= i && i < b.DelHi
	}
	return i == b.Seq || b.inInterval(t+h)
}

// InRegion reports whether loss term (i, t, h) is in the block's
// evaluation region, where its leave-one-block-out residuals are taken
// (docs/design.md, section 5.1). For sequence and interval blocks the region is
// the set of deleted terms; for a nested block it is the intersection of its
// sequence and its interval:
//
//	Sequences: i = Seq
//	Intervals: Lo <= t+h < Hi
//	Nested:    i = Seq and Lo <= t+h < Hi
//
// Like Deletes, it does not check that the term exists.
func (b Block) InRegion(i, t, h int) bool {
	switch b.Kind {
	case Sequences:
		return i == b.Seq
	case Intervals:
		return b.inInterval(t + h)
	case Windows:
		return b.inInterval(i)
	}
	return i == b.Seq && b.inInterval(t+h)
}

// Deleted returns the target rows whose loss terms the block deletes, as
// non-empty spans of d's sequences in sequence order: row r of a span
// stands for the terms (i, r-h, h) of every horizon h <= r of the model
// (only (i, r, 0) with one output per step). The spans cover rows,
// not terms: rows without a target (Sequence.HasTarget) have no terms and
// must be skipped. The result is newly allocated.
func (b Block) Deleted(d *Dataset) []Span {
	return b.spans(d, false)
}

// Region returns the target rows of the block's evaluation region as
// non-empty spans of d's sequences in sequence order, under the same
// conventions as Deleted.
func (b Block) Region(d *Dataset) []Span {
	return b.spans(d, true)
}

// spans returns, for each sequence, the rows of the deleted set (region
// false) or of the evaluation region (region true) as one span. Every block
// meets every sequence in one run of rows: the whole sequence, the
// interval, or nothing.
func (b Block) spans(d *Dataset, region bool) []Span {
	var out []Span
	for i, s := range d.Seqs {
		if lo, hi := b.rows(i, s.Len(), region); lo < hi {
			out = append(out, Span{Seq: i, Lo: lo, Hi: hi})
		}
	}
	return out
}

// rows returns the run [lo, hi) of rows of sequence i, of length n, in the
// deleted set or the evaluation region; lo >= hi when it is empty.
func (b Block) rows(i, n int, region bool) (lo, hi int) {
	inSeq := i == b.Seq
	switch {
	case b.Kind == Windows && (region && b.inInterval(i) || !region && b.DelLo <= i && i < b.DelHi):
		return 0, n
	case b.Kind == Windows:
		return 0, 0
	case b.Kind == Sequences && inSeq:
		return 0, n
	case b.Kind == Sequences:
		return 0, 0
	case b.Kind == Nested && inSeq && !region:
		return 0, n
	case b.Kind == Nested && !inSeq && region:
		return 0, 0
	}
	return b.Lo, min(b.Hi, n)
}

// Scheme is the list of blocks of one scheme, with the decisions made while
// building it.
type Scheme struct {
	Requested Kind // the scheme asked for
	// Kind is the scheme in use: Requested, or Sequences when the interval
	// or nested scheme is degenerate.
	Kind Kind
	// Degenerate reports that the interval length leaves fewer than two
	// intervals holding a target, always so when K >= the longest
	// sequence: one interval block would delete the whole training set,
	// so sequence blocks are used instead (docs/design.md, section 3.4).
	Degenerate bool
	K          int     // the interval length asked for; 0 for the sequence scheme
	Blocks     []Block // the blocks, each with at least one target in its region
	// Notes explain, in sentences a report can print, the fallback to
	// sequence blocks and the blocks left out because their evaluation
	// region holds no target.
	Notes []string
}

// NewScheme returns the blocks of the scheme kind over the training set d,
// with interval length k (ignored for Sequences). Blocks whose evaluation
// region holds no target (a sequence that a shift left without targets,
// an interval past the last target, a nested block whose sequence is
// shorter than its interval) are left out, and Notes say so. When fewer
// than two intervals hold a target, in particular when k >= d.MaxLen(),
// the interval and nested schemes fall back to sequence blocks: Kind is
// then Sequences and Degenerate is set.
//
// The error wraps ErrScheme when d has no targets, when k < 1 for an
// interval or nested scheme, when kind is unknown, or when no block holds
// a target.
func NewScheme(d *Dataset, kind Kind, k int) (*Scheme, error) {
	bad := func(format string, args ...any) (*Scheme, error) {
		return nil, fmt.Errorf("blocks: %w", fail(ErrScheme, format, args...))
	}
	if !d.Labelled() {
		return bad("%s has no target columns: blocks are built over training data, which needs targets", d.File)
	}
	switch kind {
	case Sequences:
		k = 0
	case Intervals, Nested:
		if k < 1 {
			return bad("interval length %d: it must be at least 1", k)
		}
	case Windows:
		if d.Windows == nil || k < 1 {
			return bad("window blocks of length %d over %s: they need a block length of at least 1 and the windows of a long series (CutWindows)", k, d.File)
		}
		return &Scheme{Requested: kind, Kind: kind, K: k, Blocks: windowBlocks(d, k), Notes: []string{fmt.Sprintf(
			"%d windows of %d rows, stride 1, cut from %d series of %s; each window block leaves out every window that uses a row of its stretch of %s.",
			d.Len(), d.Windows.Len, d.Windows.Series.Len(), d.File, plural(k, "row"))}}, nil
	default:
		return bad("unknown block scheme %v", kind)
	}
	s := &Scheme{Requested: kind, Kind: kind, K: k}

	var ivs []Block // the intervals that hold a target
	if kind != Sequences {
		tmax := d.MaxLen()
		total := (tmax + k - 1) / k
		for j := range total {
			lo, hi := j*k, min((j+1)*k, tmax)
			if hasTarget(d, -1, lo, hi) {
				ivs = append(ivs, Block{Kind: Intervals, Seq: -1, Interval: j, Lo: lo, Hi: hi, Label: intervalLabel(d, lo, hi)})
			}
		}
		if len(ivs) < 2 {
			s.Kind, s.Degenerate = Sequences, true
			if k >= tmax {
				s.Notes = append(s.Notes, fmt.Sprintf(
					"interval length %d is at least the length of the longest sequence (%d steps): the %s scheme would delete the whole training set, so sequence blocks are used instead",
					k, tmax, kind))
			} else {
				s.Notes = append(s.Notes, fmt.Sprintf(
					"with interval length %d only %d of %d intervals hold a target (shift %d): the %s scheme would delete the whole training set, so sequence blocks are used instead",
					k, len(ivs), total, d.Shift, kind))
			}
		} else if len(ivs) < total {
			s.Notes = append(s.Notes, fmt.Sprintf("%d of %d intervals hold no target (shift %d) and have no block",
				total-len(ivs), total, d.Shift))
		}
	}

	switch s.Kind {
	case Sequences:
		var empty []string
		for i, q := range d.Seqs {
			if hasTarget(d, i, 0, q.Len()) {
				s.Blocks = append(s.Blocks, Block{Kind: Sequences, Seq: i, Interval: -1, Label: seqLabel(d, i)})
			} else {
				empty = append(empty, seqLabel(d, i))
			}
		}
		if len(empty) > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s no target and no block: %s",
				pluralHas(len(empty), "sequence"), elide(empty, 5)))
		}
	case Intervals:
		s.Blocks = ivs
	case Nested:
		left := 0
		for i := range d.Seqs {
			for _, iv := range ivs {
				if !hasTarget(d, i, iv.Lo, iv.Hi) {
					left++
					continue
				}
				s.Blocks = append(s.Blocks, Block{Kind: Nested, Seq: i, Interval: iv.Interval, Lo: iv.Lo, Hi: iv.Hi,
					Label: seqLabel(d, i) + " × " + iv.Label})
			}
		}
		if left > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf(
				"%d of %d nested blocks have no target in their evaluation region (the sequence is shorter than the interval, or has no targets there) and were left out",
				left, len(d.Seqs)*len(ivs)))
		}
	}
	if len(s.Blocks) == 0 {
		return bad("no row of %s has a target (shift %d): there is nothing to delete", d.File, d.Shift)
	}
	return s, nil
}

// RegionOf returns the function that gives the index of the block whose
// evaluation region holds the terms of sequence seq with target row row
// (t+h), or -1 when no block's does. Each term is in the region of at
// most one block.
func (s *Scheme) RegionOf() func(seq, row int) int {
	type key struct{ seq, iv int }
	byKey := map[key]int{}
	for k, b := range s.Blocks {
		switch b.Kind {
		case Sequences:
			byKey[key{b.Seq, -1}] = k
		case Intervals:
			byKey[key{-1, b.Interval}] = k
		case Nested:
			byKey[key{b.Seq, b.Interval}] = k
		case Windows:
			for i := b.Lo; i < b.Hi; i++ {
				byKey[key{i, -1}] = k
			}
		}
	}
	return func(seq, row int) int {
		kk := key{seq, -1}
		switch s.Kind {
		case Intervals:
			kk = key{-1, row / s.K}
		case Nested:
			kk = key{seq, row / s.K}
		}
		if k, ok := byKey[kk]; ok && row >= 0 {
			return k
		}
		return -1
	}
}

// hasTarget reports whether a row in [lo, hi) of sequence i (of any
// sequence when i < 0) has a target.
func hasTarget(d *Dataset, i, lo, hi int) bool {
	seqs := d.Seqs
	if i >= 0 {
		seqs = seqs[i : i+1]
	}
	for _, q := range seqs {
		for r := max(lo, 0); r < min(hi, q.Len()); r++ {
			if q.HasTarget(r) {
				return true
			}
		}
	}
	return false
}

// seqLabel returns "sequence 17 (id P017)" for index 16.
func seqLabel(d *Dataset, i int) string {
	return fmt.Sprintf("sequence %d (id %s)", i+1, d.Seqs[i].ID)
}

// stepsLabel returns "steps 11–15" for rows [10, 15), or "step 11".
func stepsLabel(lo, hi int) string {
	if hi-lo <= 1 {
		return fmt.Sprintf("step %d", lo+1)
	}
	return fmt.Sprintf("steps %d–%d", lo+1, hi)
}

// intervalLabel returns stepsLabel(lo, hi), followed by the step values
// when every sequence has the same step values in rows [lo, hi).
func intervalLabel(d *Dataset, lo, hi int) string {
	label := stepsLabel(lo, hi)
	var first, last float64
	found := false
	for r := lo; r < hi; r++ {
		var v float64
		seen := false
		for _, q := range d.Seqs {
			if r >= q.Len() {
				continue
			}
			if seen && q.Steps[r] != v {
				return label
			}
			v, seen = q.Steps[r], true
		}
		if !seen {
			break
		}
		if !found {
			first, found = v, true
		}
		last = v
	}
	if !found {
		return label
	}
	if hi-lo <= 1 {
		return fmt.Sprintf("%s (t = %s)", label, formatStep(first))
	}
	return fmt.Sprintf("%s (t = %s–%s)", label, formatStep(first), formatStep(last))
}

// pluralHas returns "1 sequence has", "3 sequences have".
func pluralHas(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s has", noun)
	}
	return fmt.Sprintf("%d %ss have", n, noun)
}

// elide joins at most most items, then says how many more there are.
func elide(items []string, most int) string {
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:most], ", "), len(items)-most)
}
