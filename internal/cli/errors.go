package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// This file: how an error reaches the user. The libraries return values
// (internal/errs): a list of problems is an errs.List (graph.ErrorList,
// blocks.ErrorList), and a problem that an option fixes names the option
// as a value (*blocks.DataError, *audit.OptionError); here those options
// become this command's flags.

// maxProblems is the number of problems of a list printed before the rest
// are counted.
const maxProblems = 20

// printError writes err to w as "audit: message". An error that holds a
// list of problems (an errs.List of two or more anywhere in its chain) is
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
	var list errs.List
	if !errors.As(err, &list) || len(list) < 2 {
		return firstLine(render(err))
	}
	// The context the chain puts in front of the list, as in
	// fmt.Errorf("onnx: %s: %w", path, list).
	prefix := ""
	if full, own := err.Error(), list.Error(); strings.HasSuffix(full, own) {
		prefix = full[:len(full)-len(own)]
	}
	var b strings.Builder
	b.WriteString(prefix + list.Header())
	for i, p := range list {
		if i == maxProblems {
			fmt.Fprintf(&b, "\n\t… and %d more (%d problems in all)", len(list)-maxProblems, len(list))
			break
		}
		b.WriteString("\n\t")
		b.WriteString(firstLine(render(p)))
	}
	return b.String()
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

// render is err's message with the options that fix it, which the
// library names by their Go names at the end of an errs.Fixer's message
// (a *blocks.DataError, an *audit.OptionError), written as this command's
// flags (advice). Only that end is replaced: the context the chain puts in
// front stays as it is.
func render(err error) string {
	msg := err.Error()
	var f errs.Fixer
	if !errors.As(err, &f) {
		return msg
	}
	body := f.Text(func([]errs.Option) string { return "" }) // the message without its options
	goNames, ours := f.Error(), f.Text(advice)
	if !strings.HasPrefix(goNames, body) || !strings.HasPrefix(ours, body) {
		return msg
	}
	if tail := goNames[len(body):]; tail != "" && strings.HasSuffix(msg, tail) {
		return msg[:len(msg)-len(tail)] + ours[len(body):]
	}
	return msg
}

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
	case audit.OptBlocks:
		return "--blocks"
	case audit.OptBlockLength:
		return "--block-length"
	}
	return ""
}
