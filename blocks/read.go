package blocks

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxErrors is the number of problems Read reports before it stops.
const DefaultMaxErrors = 10

// Options says which columns of a file hold what. The zero value (or a nil
// *Options) reads the default layout: id, t, y, and every other column a
// feature. Names are matched exactly (case matters) after trimming spaces.
type Options struct {
	IDCol   string   // the sequence id column; "" means "id"
	TimeCol string   // the step column; "" means "t"
	Targets []string // the target columns; empty means ["y"]
	// Features are the feature columns, in the order the model takes
	// them. Empty means every column that is not the id, step or a target
	// column, in file order. A target column may be a feature only with a
	// non-zero Shift (the current value as input, a later one as target);
	// the step column may be a feature; the id column may not.
	Features []string
	// OptionalTargets lets a file have none of the target columns (a test
	// file without labels): it is then read without targets. A file that
	// has some but not all of them is still an error. Leave it false for
	// training files.
	OptionalTargets bool
	// Shift takes the target of row t from row t+Shift of the same
	// sequence (positions, not step values), so that a model that
	// forecasts the next value can be read with Shift = 1 from a file whose
	// row t holds the value observed at step t. Rows for which t+Shift is
	// outside the sequence have no target. Negative values look back.
	Shift int
	// MaxErrors is the number of problems reported before reading stops;
	// 0 or less means DefaultMaxErrors.
	MaxErrors int
}

// ReadFile reads a dataset from the CSV file at path; see Read. The path as
// given names the file in messages.
func ReadFile(path string, opts *Options) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	defer f.Close()
	return Read(f, path, opts)
}

// Read reads a dataset in long CSV format from r (see "CSV format" in the
// package documentation); name is the file name used in the Dataset and in
// messages. Any bytes give a dataset or an error, never a panic.
//
// The error lists every problem found, up to opts.MaxErrors, in line order:
// a *DataError for one problem, an ErrorList for several. Past that limit
// Read goes on while it finds only problems it already lists (the same
// column and message), counting them in their first *DataError's More,
// and stops at the first other problem, so that a file whose one bad
// value repeats on every line is read through and its problem counted,
// while a file with many different problems stops early. Each *DataError
// names the file, the line and the column and wraps one of ErrEmptyFile,
// ErrNoRows, ErrSyntax, ErrColumn, ErrMissing, ErrNumber, ErrDuplicateStep
// or ErrTooMany. An error of the underlying reader is returned in a
// *DataError that wraps it.
func Read(r io.Reader, name string, opts *Options) (*Dataset, error) {
	o, err := resolve(opts)
	if err != nil {
		return nil, newDataError(name, 0, "", err)
	}
	p := &parser{name: name, o: o, max: o.MaxErrors}
	d := p.read(r)
	if err := p.err(); err != nil {
		return nil, err
	}
	return d, nil
}

// resolve fills in the defaults of opts and trims the names.
func resolve(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.IDCol = orDefault(strings.TrimSpace(o.IDCol), "id")
	o.TimeCol = orDefault(strings.TrimSpace(o.TimeCol), "t")
	if len(o.Targets) == 0 {
		o.Targets = []string{"y"}
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = DefaultMaxErrors
	}
	var err error
	if o.Targets, err = trimNames(o.Targets, "target", OptTargets); err != nil {
		return o, err
	}
	if o.Features, err = trimNames(o.Features, "feature", OptFeatures); err != nil {
		return o, err
	}
	return o, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// trimNames returns a trimmed copy of names and refuses empty names.
func trimNames(names []string, role string, opt Option) ([]string, error) {
	if names == nil {
		return nil, nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimSpace(n)
		if out[i] == "" {
			return nil, failFix(ErrColumn, []Option{opt}, "%s column %d of %d has an empty name: name every %s column", role, i+1, len(names), role)
		}
	}
	return out, nil
}

// parser holds the state of one Read.
type parser struct {
	name    string
	o       Options
	max     int
	errs    dataErrors
	stopped bool // reading stopped
	cut     bool // it stopped at a problem beyond the first max
	// kinds are the problems kept, by key (kind), once max of them are
	// kept; more counts, by key, the problems found since that the list
	// does not keep.
	kinds map[string]bool
	more  map[string]int

	header     []string
	headerLine int
	idCol      int
	timeCol    int
	featCols   []int
	targCols   []int // nil when the file has no targets
	defaultFt  bool  // features were not chosen by the user
	targetName []string
}

// row is one good data row: its sequence, step and line. Its values are
// at the row's index in parser-local flat arrays.
type row struct {
	seq  int
	step float64
	line int
}

// add records a problem and reports whether reading may go on. Once max
// problems are kept, a problem of a kind already kept is only counted
// (reading goes on), and any other stops the reading.
func (p *parser) add(line int, col string, err error) bool {
	if p.stopped {
		// Only the checks after the rows (duplicate steps) add problems
		// once stopped: kept, so that err lists the first by line.
		p.errs = append(p.errs, newDataError(p.name, line, col, err))
		return false
	}
	if len(p.errs) < p.max {
		p.errs = append(p.errs, newDataError(p.name, line, col, err))
		return true
	}
	if p.kinds == nil {
		p.kinds, p.more = map[string]bool{}, map[string]int{}
		for _, e := range p.errs {
			p.kinds[problemKey(e.Column, e.Err)] = true
		}
	}
	if k := problemKey(col, err); p.kinds[k] {
		p.more[k]++
		return true
	}
	p.errs = append(p.errs, newDataError(p.name, line, col, err))
	p.stopped, p.cut = true, true
	return false
}

// problemKey is what the problems of one kind share, their column and
// message: they differ only in their line.
func problemKey(col string, err error) string {
	return col + "\x00" + err.Error()
}

// err returns the first max problems by line, the first of each kind
// with the count of that kind's unlisted problems, and, when reading
// stopped at a problem of another kind, a last problem wrapping
// ErrTooMany at the line of the first problem not listed (the problems
// found after the rows, duplicate steps, may come before the others).
func (p *parser) err() error {
	p.errs.sortLines()
	var beyond dataErrors
	if len(p.errs) > p.max {
		p.errs, beyond = p.errs[:p.max], p.errs[p.max:]
	}
	if p.more == nil {
		p.more = map[string]int{}
	}
	listed := map[string]bool{}
	for _, e := range p.errs {
		listed[problemKey(e.Column, e.Err)] = true
	}
	var stop *DataError // the first problem beyond of a kind not listed
	for _, e := range beyond {
		if k := problemKey(e.Column, e.Err); listed[k] {
			p.more[k]++
		} else if stop == nil {
			stop = e
		}
	}
	if stop == nil && len(beyond) > 0 {
		stop = beyond[0]
	}
	for _, e := range p.errs {
		if k := problemKey(e.Column, e.Err); p.more[k] > 0 {
			e.More, p.more[k] = p.more[k], 0
		}
	}
	if p.cut && stop != nil {
		p.errs = append(p.errs, &DataError{File: p.name, Line: stop.Line, Err: fail(ErrTooMany,
			"stopped after %d problems: fix these and read the file again", p.max)})
	}
	if len(p.errs) == 1 && p.errs[0].More > 0 {
		return p.errs.list() // a list of one, which counts its lines
	}
	return p.errs.list().Err()
}

var bom = []byte("\ufeff")

func (p *parser) read(in io.Reader) *Dataset {
	br := bufio.NewReader(&lineLimiter{r: in, line: 1})
	if b, _ := br.Peek(len(bom)); bytes.Equal(b, bom) {
		br.Discard(len(bom))
	}
	if head, _ := br.Peek(64 << 10); lineEndings(head) == "CR" {
		p.add(1, "", fail(ErrSyntax,
			"the lines end with a carriage return alone (CR, the classic Mac OS style), which reads as one long line: convert the line endings to LF (for example: tr '\\r' '\\n' < %s > fixed.csv)", p.name))
		return nil
	}
	head, _ := br.Peek(64 << 10)
	size, perLine := fileLines(in, head) // head is valid until the next read
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true

	rec, err := cr.Read()
	switch {
	case err == io.EOF:
		p.add(0, "", fail(ErrEmptyFile,
			"the file is empty: it needs a header line naming the columns, such as %s,%s,x1,%s",
			p.o.IDCol, p.o.TimeCol, p.o.Targets[0]))
		return nil
	case err != nil:
		p.readErr(err, nil)
		return nil
	}
	p.headerLine, _ = cr.FieldPos(0)
	if len(rec) > MaxColumns {
		p.add(p.headerLine, "", fail(ErrSyntax,
			"the header has %d columns, more than the %d this reader takes: is this the long format (one row per sequence and step, with columns %s, %s, the features and %s)?",
			len(rec), MaxColumns, p.o.IDCol, p.o.TimeCol, p.o.Targets[0]))
		return nil
	}
	p.header = make([]string, len(rec))
	for i, f := range rec {
		p.header[i] = strings.TrimSpace(f)
	}
	if !p.columns() {
		return nil
	}

	d := len(p.featCols)
	k := len(p.targCols)
	rowsHint := expectedRows(size, perLine, len(p.header))
	// The flat arrays sized from the file's size at once: grown by
	// appends they were half the CPU of reading a million sequences
	// (copying and clearing each larger array).
	var (
		rows = make([]row, 0, rowsHint)
		xs   = make([]float64, 0, rowsHint*d)
		ys   = make([]float64, 0, rowsHint*k)
		// labelled[r] is false when row r's target cells are empty
		// (no label); its values in ys are then zeros.
		labelled = make([]bool, 0, rowsHint)
		seqOf    = map[string]int{}
		ids      []string
		seqRows  [][]int
	)
	for !p.stopped {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !p.readErr(err, rec) {
				break
			}
			continue
		}
		line, _ := cr.FieldPos(0)
		if blank(rec) {
			if !p.add(line, "", fail(ErrMissing, "the row is empty (%d empty fields): delete it", len(rec))) {
				break
			}
			continue
		}
		id := strings.TrimSpace(rec[p.idCol])
		if id == "" {
			l, _ := cr.FieldPos(p.idCol)
			p.add(l, p.o.IDCol, fail(ErrMissing, "empty cell: every row needs a sequence id"))
			continue
		}
		step, ok := p.number(cr, rec, p.timeCol, p.o.TimeCol, roleTime)
		if !ok {
			continue
		}
		n := len(xs)
		for _, c := range p.featCols {
			v, ok1 := p.number(cr, rec, c, p.header[c], roleFeature)
			if ok = ok1; !ok {
				break
			}
			xs = append(xs, v)
		}
		if !ok {
			xs = xs[:n]
			continue
		}
		m := len(ys)
		var has bool
		if ys, has, ok = p.targets(cr, rec, ys); !ok {
			xs, ys = xs[:n], ys[:m]
			continue
		}
		labelled = append(labelled, has)
		s, seen := seqOf[id]
		if !seen {
			s = len(ids)
			seqOf[id] = s
			ids = append(ids, id)
			seqRows = append(seqRows, nil)
		}
		seqRows[s] = append(seqRows[s], len(rows))
		rows = append(rows, row{seq: s, step: step, line: line})
	}
	if p.stopped {
		return nil
	}
	if len(rows) == 0 {
		if len(p.errs) == 0 {
			p.add(p.headerLine, "", fail(ErrNoRows,
				"no data rows: the file has only the header line (%s)", listNames(p.header)))
		}
		return nil
	}

	ds := &Dataset{
		File:     p.name,
		IDCol:    p.o.IDCol,
		TimeCol:  p.o.TimeCol,
		Features: make([]string, d),
		Targets:  p.targetName,
		Shift:    p.o.Shift,
		Seqs:     make([]*Sequence, len(ids)),
	}
	for i, c := range p.featCols {
		ds.Features[i] = p.header[c]
	}
	for s, idx := range seqRows {
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case rows[a].step < rows[b].step:
				return -1
			case rows[a].step > rows[b].step:
				return 1
			}
			return 0
		})
		for t := 1; t < len(idx); t++ {
			a, b := rows[idx[t-1]], rows[idx[t]]
			if a.step == b.step {
				p.add(b.line, p.o.TimeCol, fail(ErrDuplicateStep,
					"step %s of sequence %q is also on line %d: steps within a sequence must be unique; remove one of the rows or give it another id",
					formatStep(b.step), ids[s], a.line))
			}
		}
		T := len(idx)
		seq := &Sequence{
			ID:    ids[s],
			Steps: make([]float64, T),
			Lines: make([]int, T),
			X:     make([][]float64, T),
		}
		if k > 0 {
			seq.Y = make([][]float64, T)
		}
		for t, r := range idx {
			seq.Steps[t] = rows[r].step
			seq.Lines[t] = rows[r].line
			seq.X[t] = xs[r*d : (r+1)*d : (r+1)*d]
			if u := t + p.o.Shift; k > 0 && u >= 0 && u < T && labelled[idx[u]] {
				ru := idx[u]
				seq.Y[t] = ys[ru*k : (ru+1)*k : (ru+1)*k]
			}
		}
		if k > 0 && p.o.Shift > 0 {
			seq.Head = make([][]float64, min(p.o.Shift, T))
			for t := range seq.Head {
				if r := idx[t]; labelled[r] {
					seq.Head[t] = ys[r*k : (r+1)*k : (r+1)*k]
				}
			}
		}
		ds.Seqs[s] = seq
	}
	if len(p.errs) > 0 {
		return nil
	}
	return ds
}

// fileLines returns the size of the file in (when in has one: an
// *os.File, else 0) and the mean bytes per line of its first bytes head
// after the first line (0 with fewer than two lines).
func fileLines(in io.Reader, head []byte) (int64, float64) {
	f, ok := in.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return 0, 0
	}
	fi, err := f.Stat()
	lines := bytes.Count(head, []byte{'\n'})
	if err != nil || !fi.Mode().IsRegular() || lines < 2 {
		return 0, 0
	}
	// The header line is often longer than a data line: count from the
	// second line.
	first := bytes.IndexByte(head, '\n') + 1
	last := bytes.LastIndexByte(head, '\n') + 1
	return fi.Size(), float64(last-first) / float64(lines-1)
}

// expectedRows estimates the data rows of a file of size bytes and
// perLine bytes per line (fileLines), a little over, so that the rows'
// arrays are allocated once (0 when it cannot tell). A data row of fields
// columns takes at least 2 bytes per field (a character and a comma or
// the line's end), which bounds the estimate whatever the first lines
// are.
func expectedRows(size int64, perLine float64, fields int) int {
	if size <= 0 || perLine <= 0 {
		return 0
	}
	n := float64(size) / max(perLine, float64(2*fields)) * 1.05
	if n > 1<<31 {
		return 0
	}
	return int(n) + 16
}

// readErr records an error returned by csv.Reader.Read and reports whether
// reading may go on.
func (p *parser) readErr(err error, rec []string) bool {
	var pe *csv.ParseError
	if le := (*lineError)(nil); errors.As(err, &le) {
		p.add(le.line, "", newProblem(ErrSyntax, []error{ErrLineTooLong},
			"line %d is longer than %d bytes (1 MiB), the most this reader takes in one line: is this a CSV file, with line breaks?", le.line, MaxLineBytes))
		p.stopped = true
		return false
	}
	if !errors.As(err, &pe) {
		p.add(0, "", fmt.Errorf("reading the file: %w", err))
		p.stopped = true
		return false
	}
	line := pe.StartLine
	where := ""
	if pe.Line != pe.StartLine {
		where = fmt.Sprintf(" (in the field that starts here; found on line %d)", pe.Line)
	}
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return p.add(line, "", newProblem(ErrSyntax, []error{err},
			"the row has %s, the header has %d (%s): every row needs one value per column",
			plural(len(rec), "field"), len(p.header), listNames(p.header)))
	case errors.Is(pe.Err, csv.ErrBareQuote):
		return p.add(line, "", newProblem(ErrSyntax, []error{err},
			`malformed CSV at byte %d of line %d%s: a quote (") inside a field that does not start with one: quote the whole field and double the quotes inside it, as in "a ""b"" c"`,
			pe.Column, pe.Line, where))
	case errors.Is(pe.Err, csv.ErrQuote):
		return p.add(line, "", newProblem(ErrSyntax, []error{err},
			`malformed CSV at byte %d of line %d%s: a quoted field is not closed, or has text after its closing quote: check the quotes`,
			pe.Column, pe.Line, where))
	}
	return p.add(line, "", newProblem(ErrSyntax, []error{err}, "malformed CSV: %v", err))
}

// columns resolves the column choice against the header, recording every
// problem, and reports whether the rows can be read.
func (p *parser) columns() bool {
	h := p.header
	line := p.headerLine
	if len(h) == 1 && strings.ContainsAny(h[0], ";\t|") {
		p.add(line, "", fail(ErrSyntax,
			"the header is a single field %q: the file seems to use another separator than a comma; rnnaudit reads comma-separated files only, so convert the file",
			h[0]))
		return false
	}
	ok := true
	bad := func(col string, opts []Option, format string, args ...any) {
		p.add(line, col, failFix(ErrColumn, opts, format, args...))
		ok = false
	}
	index := map[string]int{}
	for i, name := range h {
		if name == "" {
			continue
		}
		if j, dup := index[name]; dup {
			bad(name, nil, "the header names two columns %q (fields %d and %d): rename one", name, j+1, i+1)
			continue
		}
		index[name] = i
	}
	find := func(name, role string, opt Option) int {
		if i, found := index[name]; found {
			return i
		}
		hint := ""
		for _, n := range h {
			if strings.EqualFold(n, name) {
				hint = fmt.Sprintf(" (did you mean %q? names are case-sensitive)", n)
				break
			}
		}
		bad(name, []Option{opt}, "no such column%s; the file has %s: name the %s column",
			hint, listNames(h), role)
		return -1
	}

	o := p.o
	if o.IDCol == o.TimeCol {
		bad(o.IDCol, []Option{OptIDCol, OptTimeCol}, "the same column is the id and the step column: name the id and the step columns")
		return false
	}
	p.idCol = find(o.IDCol, "id", OptIDCol)
	p.timeCol = find(o.TimeCol, "step", OptTimeCol)

	// Targets.
	present := 0
	for _, t := range o.Targets {
		if _, found := index[t]; found {
			present++
		}
	}
	if present > 0 || !o.OptionalTargets {
		seen := map[string]bool{}
		for _, t := range o.Targets {
			switch {
			case seen[t]:
				bad(t, []Option{OptTargets}, "named twice as a target column: name each target column once")
			case t == o.IDCol || t == o.TimeCol:
				bad(t, []Option{OptTargets}, "the %s column cannot be a target: name the target column", roleName(t, o))
			default:
				if c := find(t, "target", OptTargets); c >= 0 {
					p.targCols = append(p.targCols, c)
					p.targetName = append(p.targetName, t)
				}
			}
			seen[t] = true
		}
	}

	// Features.
	if len(o.Features) > 0 {
		seen := map[string]bool{}
		for _, f := range o.Features {
			switch {
			case seen[f]:
				bad(f, []Option{OptFeatures}, "named twice as a feature column: name each feature column once")
			case f == o.IDCol:
				bad(f, []Option{OptFeatures}, "the id column cannot be a feature: ids are names, not numbers; choose the feature columns")
			case o.Shift == 0 && slices.Contains(p.targetName, f):
				bad(f, []Option{OptFeatures, OptShift}, "the column is both a feature and the target, so the model would see the answer: drop it from the feature columns, or shift the target by 1 row to forecast the next value")
			default:
				if c := find(f, "feature", OptFeatures); c >= 0 {
					p.featCols = append(p.featCols, c)
				}
			}
			seen[f] = true
		}
	} else {
		p.defaultFt = true
		for i, name := range h {
			if i == p.idCol || i == p.timeCol || slices.Contains(p.targCols, i) ||
				name == o.IDCol || name == o.TimeCol || slices.Contains(o.Targets, name) {
				continue
			}
			if name == "" {
				bad("", []Option{OptFeatures}, "field %d of the header is empty (a trailing comma?): name the column, or choose the feature columns", i+1)
				continue
			}
			if index[name] != i {
				continue // a duplicate, reported above
			}
			p.featCols = append(p.featCols, i)
		}
		if ok && len(p.featCols) == 0 {
			bad("", []Option{OptFeatures}, "no feature column: the file has only %s; add feature columns or choose them", listNames(h))
		}
	}
	return ok
}

// roleName names the role of a column that is the id or step column.
func roleName(name string, o Options) string {
	if name == o.IDCol {
		return "id"
	}
	return "step"
}

// Roles of a numeric cell, for messages.
const (
	roleTime = iota
	roleFeature
	roleTarget
)

// number parses field c of rec as a finite float64, recording the problem
// when it is not one.
func (p *parser) number(cr *csv.Reader, rec []string, c int, col string, role int) (float64, bool) {
	text := strings.TrimSpace(rec[c])
	v, err := strconv.ParseFloat(text, 64)
	if err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) && (role == roleTime || math.Abs(v) <= MaxValue) {
		return v, true
	}
	line, _ := cr.FieldPos(c)
	var prob error
	switch {
	case isMissing(text):
		what := "empty cell"
		if text != "" {
			what = fmt.Sprintf("missing value %q", text)
		}
		switch role {
		case roleTime:
			prob = fail(ErrMissing, "%s: every row needs a step", what)
		case roleFeature:
			prob = fail(ErrMissing, "%s: fill it in; rnnaudit does not impute missing values", what)
		default:
			prob = fail(ErrMissing, "%s: leave the cell empty if the row has no label (only an empty target cell means \"no label here\"; rnnaudit does not impute); a test file without labels may leave out the target columns", what)
		}
	case math.IsInf(v, 0) && err == nil:
		prob = fail(ErrNumber, "%q is infinite: only finite values are allowed", text)
	case err == nil && math.Abs(v) > MaxValue:
		prob = fail(ErrNumber, "%q is too large: squared errors of values above %g overflow float64 and make every interval unbounded; rescale the column (divide it by a power of ten)", text, MaxValue)
	case errors.Is(err, strconv.ErrRange):
		prob = fail(ErrNumber, "%q is out of the range of float64 numbers: rescale the column", text)
	default:
		hint := "write a number such as 1.5 or -2e-3"
		var opts []Option
		if _, err := strconv.ParseFloat(strings.Replace(text, ",", ".", 1), 64); err == nil {
			hint = "write the decimal separator as a point (1.5, not 1,5)"
		} else if role == roleTime {
			hint = "steps must be numbers (integers or decimals); convert dates or times to numbers, such as days since the start"
		} else if role == roleFeature && p.defaultFt {
			hint += "; if the column is not a feature, choose the feature columns"
			opts = []Option{OptFeatures}
		}
		prob = failFix(ErrNumber, opts, "%q is not a number: %s", text, hint)
	}
	p.add(line, col, prob)
	return 0, false
}

// targets appends the target values of one row to ys and reports whether
// the row has a label, and whether the row can be read (a problem is
// recorded otherwise). Target cells that are all empty (or spaces) mean
// "no label here": the row then has no target and zeros stand in ys for
// its values. A row with some target cells empty and others filled is a
// problem: the label would be partial.
func (p *parser) targets(cr *csv.Reader, rec []string, ys []float64) ([]float64, bool, bool) {
	empty := 0
	for _, c := range p.targCols {
		if strings.TrimSpace(rec[c]) == "" {
			empty++
		}
	}
	if empty == len(p.targCols) {
		for range p.targCols {
			ys = append(ys, 0)
		}
		return ys, false, true
	}
	for _, c := range p.targCols {
		if strings.TrimSpace(rec[c]) == "" {
			line, _ := cr.FieldPos(c)
			p.add(line, p.header[c], fail(ErrMissing,
				"empty cell, while %d of the row's %d target columns hold a value: a row has a value in every target column (a label) or in none (no label here)",
				len(p.targCols)-empty, len(p.targCols)))
			return ys, false, false
		}
		v, ok := p.number(cr, rec, c, p.header[c], roleTarget)
		if !ok {
			return ys, false, false
		}
		ys = append(ys, v)
	}
	return ys, true, true
}

// blank reports whether every field of a row is empty or spaces.
func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// isMissing reports whether a (trimmed) cell is empty or a common
// missing-value marker.
func isMissing(s string) bool {
	switch strings.ToLower(s) {
	case "", "nan", "-nan", "+nan", "na", "n/a", "nil", "null", "none", "?", "-", ".":
		return true
	}
	return false
}

// listNames returns "a, b, c", eliding the middle of long lists.
func listNames(names []string) string {
	const most = 12
	quoted := func(ns []string) string {
		out := make([]string, len(ns))
		for i, n := range ns {
			if n == "" {
				n = `""`
			}
			out[i] = n
		}
		return strings.Join(out, ", ")
	}
	if len(names) <= most {
		return quoted(names)
	}
	return fmt.Sprintf("%s, …, %s (%d columns)", quoted(names[:most-2]), quoted(names[len(names)-2:]), len(names))
}

// formatStep prints a step value as short as possible (3, 2.5, 1e+09).
func formatStep(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
