// Command audit tells how far to trust a recurrent model: from an ONNX
// export and its training data it gives every forecast a jackknife+
// confidence interval, and reports how well those intervals cover.
//
// Usage:
//
//	audit inspect --model m.onnx
//
// inspect prints the model's inputs and outputs with their shapes and
// detected layout, the operators it uses, and its parameter tensors.
//
// Exit status: 0 on success, 2 on bad usage, 1 on any other error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError marks errors in how the command was called (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

const topUsage = `usage: audit <command> [flags]

Commands:
  inspect   describe a model: inputs, outputs, layout, operators, parameters

Run 'audit <command> --help' for the flags of a command.

Examples:
  audit inspect --model examples/synthetic/model.onnx
`

// run executes the command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 1
	}
}

var errHelp = errors.New("help requested")

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command given (run 'audit --help')")
	}
	switch args[0] {
	case "inspect":
		return inspect(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, topUsage)
		return errHelp
	}
	return usagef("unknown command %q (run 'audit --help')", args[0])
}
