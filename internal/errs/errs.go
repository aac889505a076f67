// Package errs holds the error values every package of the module shares:
// List, the one list of problems found in one pass (graph.ErrorList and
// blocks.ErrorList are this type), and OptionError, a problem whose fix is
// to change some options, which it names as values (Option) so that a
// program can name them in its own words: cmd/audit writes its flags.
//
// A message names its options in parentheses at its end, by their Go
// names: "eigenvalue 0 + lambda is exactly 0 (hvp.Options.Damping)".
// Text writes the same message with the options in other words. No
// program needs to rewrite messages: it finds the values with errors.As.
package errs

import (
	"errors"
	"fmt"
	"strings"
)

// Option names a field of one of the module's option structs, the setting
// that fixes a problem, by its Go name from the module root:
// "blocks.Options.Features", "audit.Options.Damping". The packages export
// their own (blocks.OptFeatures, audit.OptDamping, hvp.OptDamping).
type Option string

// String is the option's Go name.
func (o Option) String() string { return string(o) }

// Local is the option's name inside its own package, without the package:
// "Options.Features" for "blocks.Options.Features".
func (o Option) Local() string {
	_, local, ok := strings.Cut(string(o), ".")
	if !ok {
		return string(o)
	}
	return local
}

// Names returns the advice that writes each option with name, separated
// by commas, leaving out the options for which name returns "".
func Names(name func(Option) string) func([]Option) string {
	return func(opts []Option) string {
		var parts []string
		for _, o := range opts {
			if n := name(o); n != "" {
				parts = append(parts, n)
			}
		}
		return strings.Join(parts, ", ")
	}
}

// WithAdvice is msg followed by " (advice)", or msg alone when advice is
// empty: how a message names the options that fix it.
func WithAdvice(msg, advice string) string {
	if advice == "" {
		return msg
	}
	return msg + " (" + advice + ")"
}

// Fixer is an error whose message ends with the options that fix it, in
// parentheses: *OptionError and *blocks.DataError. Text is the message with
// the options written by advice, which receives them in the order the
// message names them; Error is Text with their Go names.
type Fixer interface {
	error
	Text(advice func([]Option) string) string
}

// OptionError is a problem that changing Options fixes. Its message is
// Err's followed by the options in parentheses.
type OptionError struct {
	Err     error    // what is wrong and what to do, without the options
	Options []Option // the options the advice refers to, in its order
}

// Fix returns an *OptionError whose Err is fmt.Errorf(format, args...)
// (so %w wraps as usual), fixed by opts.
func Fix(opts []Option, format string, args ...any) error {
	return &OptionError{Err: fmt.Errorf(format, args...), Options: opts}
}

// Error is the message with the options' Go names.
func (e *OptionError) Error() string { return e.Text(Names(Option.String)) }

// Text is the message with the options written by advice.
func (e *OptionError) Text(advice func([]Option) string) string {
	return WithAdvice(e.Err.Error(), advice(e.Options))
}

// Unwrap returns Err.
func (e *OptionError) Unwrap() error { return e.Err }

// ErrTooMany marks the last error of a List that was cut short: the pass
// stopped after that many problems.
var ErrTooMany = errors.New("too many problems")

// List is the problems found in one pass (a model's nodes, a file's
// rows), so that they are all reported, and fixed, in one run. It is an
// error only with two or more problems (Err).
type List []error

// Err returns nil for an empty list, the only error for a list of one, and
// the list itself otherwise.
func (l List) Err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}

// Repeated is a problem that stands for more occurrences of itself than
// the one it describes: a pass that already held as many problems as it
// lists counts the further occurrences of a problem it holds, without
// keeping them, rather than stopping (blocks.DataError: the same bad cell
// on further lines of a file). Unlisted is their number.
type Repeated interface {
	error
	Unlisted() int
}

// unlisted is err's Unlisted count, 0 when it is not Repeated.
func unlisted(err error) int {
	if r, ok := err.(Repeated); ok {
		return max(r.Unlisted(), 0)
	}
	return 0
}

// Error is the header line, "N problems:" (or "N problems, and more:"
// when the last error wraps ErrTooMany), then every problem on a line of
// its own, indented by a tab, a Repeated one followed by "(and K more
// like it)".
func (l List) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		if k := unlisted(l[0]); k > 0 {
			return fmt.Sprintf("%s (and %d more like it)", l[0], k)
		}
		return l[0].Error()
	}
	var b strings.Builder
	b.WriteString(l.Header())
	for _, e := range l {
		b.WriteString("\n\t")
		b.WriteString(e.Error())
		if k := unlisted(e); k > 0 {
			fmt.Fprintf(&b, " (and %d more like it)", k)
		}
	}
	return b.String()
}

// Header is the first line of Error for a list of two or more. N counts
// the occurrences a Repeated problem stands for: a file with the same bad
// cell on 41 lines has 41 problems, however many of them are listed.
func (l List) Header() string {
	n := len(l)
	cut := n > 0 && errors.Is(l[n-1], ErrTooMany)
	if cut {
		n--
	}
	for _, e := range l {
		n += unlisted(e)
	}
	if cut {
		return fmt.Sprintf("%d problems, and more:", n)
	}
	return fmt.Sprintf("%d problems:", n)
}

// Unwrap lets errors.Is and errors.As look into every problem; errors.As
// finds the first that matches.
func (l List) Unwrap() []error { return l }
