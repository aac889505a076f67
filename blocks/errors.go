package blocks

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Sentinel errors wrapped by the errors of this package; test for them with
// errors.Is. Their text does not appear in messages: each error says in its
// own words what is wrong and what to do.
var (
	// ErrEmptyFile: the file has no header line.
	ErrEmptyFile = errors.New("empty file")
	// ErrNoRows: the file has a header but no data rows.
	ErrNoRows = errors.New("no data rows")
	// ErrSyntax: the file is not well-formed CSV: a row with the wrong
	// number of fields, a stray quote, or a separator other than a comma.
	// Errors from encoding/csv are wrapped too, so errors.Is(err,
	// csv.ErrFieldCount) and errors.As(err, **csv.ParseError) work.
	ErrSyntax = errors.New("malformed CSV")
	// ErrColumn: the columns asked for do not fit the header: a column that
	// is not there, a name used twice, a column given two roles, or no
	// feature column left.
	ErrColumn = errors.New("bad column choice")
	// ErrMissing: a cell that must hold a value is empty or holds a
	// missing-value marker such as NaN, NA or null.
	ErrMissing = errors.New("missing value")
	// ErrNumber: a cell that must hold a number holds text, an infinite
	// value or a number out of the float64 range.
	ErrNumber = errors.New("not a finite number")
	// ErrDuplicateStep: two rows of one sequence have the same step.
	ErrDuplicateStep = errors.New("duplicate step")
	// ErrFeatures: the feature columns do not match the model or the
	// training file (CheckFeatures, CheckCompatible).
	ErrFeatures = errors.New("feature columns do not match")
	// ErrTargets: the target columns or the shift of a test file do not
	// match the training file (CheckCompatible).
	ErrTargets = errors.New("target columns do not match")
	// ErrTooMany: reading stopped at a problem beyond the first
	// Options.MaxErrors, of another kind than theirs. It is the last error
	// of an ErrorList (the module's errs.ErrTooMany).
	ErrTooMany = errs.ErrTooMany
	// ErrScheme: a block scheme cannot be built (NewScheme, ParseKind).
	ErrScheme = errors.New("bad block scheme")
)

// Option names a field of Options. A DataError lists the options that
// choose what the problem is about, so that a program can name them in its
// own terms (cmd/audit names its flags: --features for OptFeatures). It is
// the module's one option type (errs.Option), shared with audit and hvp;
// its value is the field's Go name, "blocks.Options.Features".
type Option = errs.Option

// The fields of Options that a DataError may name.
const (
	OptIDCol    Option = "blocks.Options.IDCol"
	OptTimeCol  Option = "blocks.Options.TimeCol"
	OptTargets  Option = "blocks.Options.Targets"
	OptFeatures Option = "blocks.Options.Features"
	OptShift    Option = "blocks.Options.Shift"
)

// DataError is a problem with one place of a data file.
type DataError struct {
	File   string // the file name as given to Read or ReadFile
	Line   int    // 1-based line of the file, the header being line 1; 0 for the whole file
	Column string // the column's name from the header; "" when not about one column
	Err    error  // what is wrong and what to do; wraps a sentinel of this package
	// Options are the fields of Options that the advice at the end of
	// Err's message refers to ("choose the feature columns": Features),
	// in the order it names them; empty when no option fixes the problem.
	Options []Option
	// More is the number of further lines with the same problem (the
	// same column and message) that Read counted, without listing them,
	// after it had found Options.MaxErrors problems: a file with the same
	// bad cell on 41 lines lists 10 of them and counts the other 31 here.
	More int
}

// Unlisted is More: a DataError is an errs.Repeated, so that a list
// counts the lines it stands for.
func (e *DataError) Unlisted() int { return e.More }

// Error formats the error as "file:line: column "c": message (Options.X)",
// leaving out the parts that are not known; the options are named as
// fields of this package's Options.
func (e *DataError) Error() string {
	return e.Text(errs.Names(Option.Local))
}

// Text formats the error as Error does, with the options in the
// parentheses at the end written by advice (nothing when it returns ""):
// a command passes a function that writes its flags.
func (e *DataError) Text(advice func([]Option) string) string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %q", e.Column)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("unknown problem")
	}
	return errs.WithAdvice(b.String(), advice(e.Options))
}

// newDataError returns the error about a place of a file, with the options
// that err (made by failFix) names.
func newDataError(file string, line int, col string, err error) *DataError {
	e := &DataError{File: file, Line: line, Column: col, Err: err}
	var p *problem
	if errors.As(err, &p) {
		e.Options = p.opts
	}
	return e
}

// Unwrap returns the underlying error.
func (e *DataError) Unwrap() error { return e.Err }

// ErrorList is the list of problems found in one read of a file, in line
// order, so that a file with several problems is fixed in one go; each is
// a *DataError. When the list was cut short, its last error wraps
// ErrTooMany. It is the module's one list type (errs.List), which
// graph.ErrorList is too; errors.As(err, &de) with de a *DataError finds
// the first problem.
type ErrorList = errs.List

// dataErrors are the problems of one read, before they become an
// ErrorList.
type dataErrors []*DataError

// sortLines sorts the problems by line, keeping the order of problems on
// the same line.
func (l dataErrors) sortLines() {
	slices.SortStableFunc(l, func(a, b *DataError) int { return a.Line - b.Line })
}

// list is the problems as an ErrorList.
func (l dataErrors) list() ErrorList {
	out := make(ErrorList, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// problem is an error whose message is written for the user and which wraps
// one sentinel (and possibly a cause, such as a *csv.ParseError) without
// printing them.
type problem struct {
	msg  string
	errs []error
	opts []Option // the options the advice refers to, for the DataError
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.errs }

// newProblem returns an error that prints as the formatted message and
// wraps kind (a sentinel) and the non-nil causes.
func newProblem(kind error, causes []error, format string, args ...any) error {
	errs := []error{kind}
	for _, c := range causes {
		if c != nil {
			errs = append(errs, c)
		}
	}
	return &problem{msg: fmt.Sprintf(format, args...), errs: errs}
}

// fail is newProblem without causes.
func fail(kind error, format string, args ...any) error {
	return newProblem(kind, nil, format, args...)
}

// failFix is fail for a problem whose advice, at the end of the message,
// is to set opts.
func failFix(kind error, opts []Option, format string, args ...any) error {
	err := newProblem(kind, nil, format, args...)
	err.(*problem).opts = opts
	return err
}
