package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// maxProblems is the number of problems of a multi-error printed before
// the rest are counted.
const maxProblems = 20

// printError writes err to w as "audit: message". An error that holds a
// list of problems (blocks.ErrorList, graph.ErrorList, errors.Join, or
// any error whose Unwrap() []error results it prints one per line) is
// printed whole: its first line, then one line per problem, up to
// maxProblems and a count of the rest. Of any other error only the first
// line is printed, leaving out such things as stack traces.
func printError(w io.Writer, err error) {
	msg := terminalSafe(errorText(err))
	if !strings.HasPrefix(msg, "audit: ") {
		msg = "audit: " + msg
	}
	fmt.Fprintln(w, msg)
}

// errorText is the message printError writes for err, without the
// program name.
func errorText(err error) string {
	list, problems := findList(err)
	if list == nil {
		return firstLine(render(err))
	}
	full, own := err.Error(), list.Error()
	prefix := ""
	if strings.HasSuffix(full, own) {
		prefix = full[:len(full)-len(own)]
	}
	header := firstLine(own)
	if header == firstLine(problems[0].Error()) {
		header = fmt.Sprintf("%d problems:", len(problems)) // errors.Join has no header line
	}
	var b strings.Builder
	b.WriteString(prefix + header)
	for i, p := range problems {
		if i == maxProblems {
			fmt.Fprintf(&b, "\n\t… and %d more (%d problems in all)", len(problems)-maxProblems, len(problems))
			break
		}
		b.WriteString("\n\t")
		b.WriteString(firstLine(render(p)))
	}
	return b.String()
}

// findList returns the first error in err's chain that holds a list of
// problems, and the problems; nil when there is none. An error with
// Unwrap() []error is a list when its message puts the first line of each
// of two or more wrapped errors on a line of its own: an error that wraps
// a sentinel and a cause without printing them (or fmt.Errorf with two
// %w verbs, which prints them on one line) is not.
func findList(err error) (error, []error) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		m, ok := e.(interface{ Unwrap() []error })
		if !ok {
			continue
		}
		errs := m.Unwrap()
		if len(errs) < 2 {
			return nil, nil
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(e.Error(), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for _, c := range errs {
			if c == nil || !lines[strings.TrimSpace(firstLine(c.Error()))] {
				return nil, nil
			}
		}
		return e, errs
	}
	return nil, nil
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
	return e.context + ": " + strings.TrimPrefix(e.err.Error(), "audit: ")
}

func (e *contextError) Unwrap() error { return e.err }

// render is err's message, with the options a *blocks.DataError names
// (blocks.OptFeatures) written as the command's flags (--features).
func render(err error) string {
	msg := optionFlags.Replace(err.Error())
	var de *blocks.DataError
	if errors.As(err, &de) {
		if own := de.Error(); strings.HasSuffix(msg, own) {
			return msg[:len(msg)-len(own)] + de.Text(flagOf)
		}
	}
	return msg
}

// optionFlags names, in the audit's own error messages, the option fields
// they point at by this command's flags.
var optionFlags = strings.NewReplacer(
	"(blocks.Options.Features)", "(--features)",
	"(Options.Params)", "(--params)",
	"(is Options.Layout right?)", "(is --layout right?)",
	"(Options.Layout)", "(--layout)",
	"(Options.Retrain)", "(--retrain)",
	"(Options.Solver)", "(--solver)",
	"(Options.Rank)", "(--rank)",
	"(Options.Curvature)", "(--curvature)",
	// hvp's, whose Damping and Curvature audit passes on.
	"(Options.Damping)", "(--damping)",
	"(Options.Curvature, Options.Damping)", "(--curvature gauss-newton, or more --damping)",
	"(Options.Scale, Options.Damping)", "(--damping)",
)

// flagOf is the flag that sets a field of blocks.Options.
func flagOf(o blocks.Option) string {
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
	}
	return "the " + string(o) + " option"
}
