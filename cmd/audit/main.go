package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

//go:embed doc.go
var docSource string

// usage is the command's doc comment (doc.go), the text of --help.
func usage() string {
	_, after, _ := strings.Cut(docSource, "/*\n")
	text, _, _ := strings.Cut(after, "*/")
	return text
}

// usageError marks errors in how the command was called (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errInterrupted ends an audit stopped by Ctrl-C (SIGINT) or SIGTERM.
var errInterrupted = errors.New("interrupted")

// run executes the command line and returns the exit status: 0 on
// success (and for --help), 2 for a usage error, 130 when interrupted
// (128 + SIGINT, as shells report it), 1 for any other error.
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, safeWriter{stdout}, stderr)
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errInterrupted):
		printError(stderr, err)
		return 130
	case errors.As(err, &ue):
		printError(stderr, err)
		return 2
	default:
		printError(stderr, err)
		return 1
	}
}

var errHelp = errors.New("help requested")

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "inspect":
			return inspect(args[1:], stdout, stderr)
		case "fit":
			return fitCmd(args[1:], stdout, stderr)
		case "predict":
			return predictCmd(args[1:], stdout, stderr)
		case "serve":
			return serveCmd(args[1:], stdout, stderr)
		case "help":
			fmt.Fprint(stdout, usage())
			return errHelp
		}
		if !strings.HasPrefix(args[0], "-") {
			return usagef("unknown command %q: the commands are inspect, fit, predict and serve, or flags only to run an audit (run 'audit --help')", args[0])
		}
	}
	return auditCmd(args, stdout, stderr)
}
