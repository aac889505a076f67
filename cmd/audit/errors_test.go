package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// A model with three problems (testdata/make_bad.py) is reported with
// every problem, by inspect and by an audit.
func TestMultiErrorModel(t *testing.T) {
	model := filepath.Join("testdata", "several_problems.onnx")
	for _, args := range [][]string{
		{"inspect", "--model", model},
		{"--model", model, "--data", exTrain},
	} {
		code, _, stderr := runCmd(args...)
		if code != 1 {
			t.Errorf("%q: exit %d, want 1", args, code)
		}
		want := "audit: onnx: " + model + ": 3 problems:\n" +
			"\tnode \"hardmax\" (Hardmax): unsupported operator\n" +
			"\tnode \"norm\" (LpNormalization): unsupported operator\n" +
			"\tnode \"unpool\" (MaxUnpool): unsupported operator\n"
		if stderr != want {
			t.Errorf("%q: stderr\n%s\nwant\n%s", args, stderr, want)
		}
	}
}

func TestErrorText(t *testing.T) {
	var many []error
	for i := range 25 {
		many = append(many, fmt.Errorf("problem %d", i+1))
	}
	sentinel := errors.New("sentinel")
	for _, c := range []struct {
		name string
		err  error
		want []string // the lines
	}{
		{"graph list wrapped", fmt.Errorf("onnx: m.onnx: %w", graph.ErrorList{errors.New("a"), errors.New("b")}),
			[]string{"onnx: m.onnx: 2 problems:", "\ta", "\tb"}},
		{"blocks list", blocks.ErrorList{{File: "d.csv", Line: 2, Err: errors.New("x")}, {File: "d.csv", Line: 3, Column: "c", Err: errors.New("y")}},
			[]string{"2 problems:", "\td.csv:2: x", "\td.csv:3: column \"c\": y"}},
		{"blocks options as flags", fmt.Errorf("reading: %w", blocks.ErrorList{
			{File: "d.csv", Line: 1, Column: "a", Err: errors.New("no such column: name the id column"), Options: []blocks.Option{blocks.OptIDCol}},
			{File: "d.csv", Line: 1, Err: errors.New("x and y: name them"), Options: []blocks.Option{blocks.OptFeatures, blocks.OptShift}}}),
			[]string{"reading: 2 problems:", "\td.csv:1: column \"a\": no such column: name the id column (--id-col)", "\td.csv:1: x and y: name them (--features, --shift)"}},
		{"one blocks error, wrapped", fmt.Errorf("ctx: %w", &blocks.DataError{File: "d.csv", Err: errors.New("choose the feature columns"), Options: []blocks.Option{blocks.OptFeatures}}),
			[]string{"ctx: d.csv: choose the feature columns (--features)"}},
		{"hvp options as flags", fmt.Errorf("audit: %w", fmt.Errorf("%w: non-positive curvature (Options.Curvature, Options.Damping)", hvp.ErrIndefinite)),
			[]string{"audit: hvp: the damped curvature is not positive definite: non-positive curvature (--curvature gauss-newton, or more --damping)"}},
		{"hvp damping as flag", fmt.Errorf("%w: eigenvalue 0 + lambda is exactly 0 (Options.Damping)", hvp.ErrIndefinite),
			[]string{"hvp: the damped curvature is not positive definite: eigenvalue 0 + lambda is exactly 0 (--damping)"}},
		{"layout as flag", errors.New("audit: the model's input layout is not known: batch-first or time-first (Options.Layout)"),
			[]string{"audit: the model's input layout is not known: batch-first or time-first (--layout)"}},
		{"join without header", fmt.Errorf("reading: %w", errors.Join(errors.New("one"), errors.New("two\ndetail"))),
			[]string{"reading: 2 problems:", "\tone", "\ttwo"}},
		{"two %w on one line is not a list", fmt.Errorf("%w: %w", sentinel, errors.New("cause")),
			[]string{"sentinel: cause"}},
		{"plain error keeps its first line", errors.New("boom\ngoroutine 1 [running]:"),
			[]string{"boom"}},
	} {
		got := strings.Split(errorText(c.err), "\n")
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}

	// A long list is capped, with a count of the rest.
	got := strings.Split(errorText(fmt.Errorf("ctx: %w", graph.ErrorList(many))), "\n")
	if len(got) != 1+maxProblems+1 || got[0] != "ctx: 25 problems:" || got[maxProblems] != "\tproblem 20" ||
		got[maxProblems+1] != "\t… and 5 more (25 problems in all)" {
		t.Errorf("capped list: %q", got)
	}
}
