package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/membudget"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// This file: how an error reaches the user. The libraries return values
// (internal/errs): a list of problems is an errs.List (graph.ErrorList,
// blocks.ErrorList), a problem that an option fixes names the option as a
// value (*blocks.DataError, *audit.OptionError: errs.Fixer), and the
// context an error happened in is an *errs.Context in front of it. Here
// the message is written from those values, level by level down the
// chain: the options become this command's flags and a list is written
// one problem a line, with the context in front as it is. No message is
// taken apart.

// maxProblems is the number of problems of a list printed before the rest
// are counted.
const maxProblems = 20

// printError writes err to w as "audit: message". An error that holds a
// list of problems (an errs.List of two or more) is printed whole: its
// first line, then one line per problem, up to maxProblems and a count of
// the rest. Of any other error only the first line is printed, leaving
// out such things as stack traces.
func printError(w io.Writer, err error) {
	msg := terminalSafe(errorText(err))
	if !strings.HasPrefix(msg, "audit: ") {
		msg = "audit: " + msg
	}
	fmt.Fprintln(w, msg)
}

// maxLine is the longest line of an error message, in bytes: a line that
// repeats a long value (a 100,000-dimension shape, a long cell) has its
// middle elided, keeping how it begins and the advice at its end.
const maxLine = 1000

// errorText is the message printError writes for err, without the
// program name, each line at most maxLine bytes.
func errorText(err error) string {
	msg, list := words(err)
	if !list {
		return errs.Elide(firstLine(msg), maxLine)
	}
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = errs.Elide(l, maxLine)
	}
	return strings.Join(lines, "\n")
}

// words is err's message in this command's words, and whether it is a
// list of problems written one a line. It follows the chain through the
// errors whose parts it knows: a context (*errs.Context, the command's
// *contextError) is written in front of the rest, a list of two or more
// as its header and one problem a line, and an errs.Fixer with the
// options that fix it as flags (advice). Any other error is its message:
// whole when it holds a list (the problems, one a line, in the library's
// words), else as it is.
func words(err error) (msg string, list bool) {
	switch e := err.(type) {
	case *errs.Context:
		msg, list = words(e.Err)
		return e.Prefix + msg, list
	case *contextError:
		msg, list = words(e.err)
		return e.context + ": " + strings.TrimPrefix(msg, "audit: "), list
	case errs.List:
		if len(e) == 0 {
			return e.Error(), false
		}
		groups := e.Group(sameProblem)
		if len(e) == 1 && groups[0].More == 0 {
			return words(e[0])
		}
		var b strings.Builder
		b.WriteString(e.Header())
		for i, g := range groups {
			if i == maxProblems {
				fmt.Fprintf(&b, "\n\t… and %d more (%d problems in all)", len(groups)-maxProblems, len(e))
				break
			}
			b.WriteString("\n\t")
			if len(g.Lines)+g.More < 2 || g.Lines == nil {
				msg, _ := words(g.First)
				b.WriteString(firstLine(msg))
				continue
			}
			file, rest, _ := strings.Cut(g.Key, "\x00")
			fmt.Fprintf(&b, "%s: %s: %s", file, errs.Lines(g.Lines, shownLines, g.More), rest)
		}
		return b.String(), true
	case errs.Fixer:
		return e.Text(advice), false
	}
	var l errs.List
	return err.Error(), errors.As(err, &l) && len(l) >= 2
}

// shownLines is the number of lines a problem found at several lines of
// a file lists before it counts the rest.
const shownLines = 3

// sameProblem places a problem of a data file (*blocks.DataError) by its
// line, with the rest of its message as the key: the problems that
// differ only in their line are written once, with the lines counted,
// those the reader counted without listing them too (DataError.More:
// "train.csv: lines 2, 5, 8 and 38 more: column "x": ...").
func sameProblem(err error) (key string, line int, ok bool) {
	de, isData := err.(*blocks.DataError)
	if !isData || de.Line <= 0 || errors.Is(de, errs.ErrTooMany) {
		return "", 0, false
	}
	rest := &blocks.DataError{Column: de.Column, Err: de.Err, Options: de.Options}
	return de.File + "\x00" + strings.TrimPrefix(rest.Text(advice), ": "), de.Line, true
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// contextError puts the command's words in front of a library's error,
// dropping the library's "audit: " prefix, which the command prints once.
type contextError struct {
	context string
	err     error
}

func (e *contextError) Error() string {
	msg, _ := words(e)
	return msg
}

func (e *contextError) Unwrap() error { return e.err }

// advice writes the options that fix a problem as this command's flags,
// leaving out those no flag sets; a non-positive-definite Hessian is fixed
// by the Gauss-Newton curvature or more damping.
func advice(opts []errs.Option) string {
	var flags []string
	for _, o := range opts {
		if f := flagOf(o); f != "" && !slices.Contains(flags, f) {
			flags = append(flags, f)
		}
	}
	if slices.Equal(flags, []string{"--curvature", "--damping"}) {
		return "--curvature gauss-newton, or more --damping"
	}
	return strings.Join(flags, ", ")
}

// flagOf is the flag that sets an option of the libraries, "" when none
// does (such as hvp.OptScale, which the command chooses itself).
func flagOf(o errs.Option) string {
	switch o {
	case blocks.OptIDCol:
		return "--id-col"
	case blocks.OptTimeCol:
		return "--time-col"
	case blocks.OptTargets:
		return "--target"
	case blocks.OptFeatures:
		return "--features"
	case blocks.OptShift:
		return "--shift"
	case audit.OptLayout:
		return "--layout"
	case audit.OptSolver:
		return "--solver"
	case audit.OptRank:
		return "--rank"
	case membudget.OptMemory:
		return "--memory"
	case audit.OptCurvature, hvp.OptCurvature:
		return "--curvature"
	case hvp.OptDamping:
		return "--damping"
	case audit.OptParams:
		return "--params"
	case audit.OptRetrain:
		return "--retrain"
	case audit.OptInputs:
		return "--input"
	case audit.OptOutput:
		return "--output"
	case audit.OptHorizons:
		return "--horizons"
	case modelio.OptAlign:
		return "--align"
	case audit.OptBlocks:
		return "--blocks"
	case audit.OptBlockLength:
		return "--block-length"
	case audit.OptWindow:
		return "--window"
	}
	return ""
}
