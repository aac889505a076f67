package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
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
		{"graph list wrapped", errs.Wrapf(graph.ErrorList{errors.New("a"), errors.New("b")}, "onnx: m.onnx: "),
			[]string{"onnx: m.onnx: 2 problems:", "\ta", "\tb"}},
		{"blocks list", blocks.ErrorList{&blocks.DataError{File: "d.csv", Line: 2, Err: errors.New("x")}, &blocks.DataError{File: "d.csv", Line: 3, Column: "c", Err: errors.New("y")}},
			[]string{"2 problems:", "\td.csv:2: x", "\td.csv:3: column \"c\": y"}},
		{"blocks options as flags", errs.Wrapf(blocks.ErrorList{
			&blocks.DataError{File: "d.csv", Line: 1, Column: "a", Err: errors.New("no such column: name the id column"), Options: []blocks.Option{blocks.OptIDCol}},
			&blocks.DataError{File: "d.csv", Line: 1, Err: errors.New("x and y: name them"), Options: []blocks.Option{blocks.OptFeatures, blocks.OptShift}}}, "reading: "),
			[]string{"reading: 2 problems:", "\td.csv:1: column \"a\": no such column: name the id column (--id-col)", "\td.csv:1: x and y: name them (--features, --shift)"}},
		{"cut list", blocks.ErrorList{&blocks.DataError{File: "d.csv", Line: 2, Err: errors.New("x")}, &blocks.DataError{File: "d.csv", Line: 3, Err: fmt.Errorf("stopped: %w", blocks.ErrTooMany)}},
			[]string{"1 problems, and more:", "\td.csv:2: x", "\td.csv:3: stopped: too many problems"}},
		{"one blocks error, wrapped", errs.Wrapf(&blocks.DataError{File: "d.csv", Err: errors.New("choose the feature columns"), Options: []blocks.Option{blocks.OptFeatures}}, "ctx: "),
			[]string{"ctx: d.csv: choose the feature columns (--features)"}},
		{"hvp options as flags", errs.Wrapf(errs.Fix([]hvp.Option{hvp.OptCurvature, hvp.OptDamping}, "%w: non-positive curvature", hvp.ErrIndefinite), "audit: "),
			[]string{"audit: hvp: the damped curvature is not positive definite: non-positive curvature (--curvature gauss-newton, or more --damping)"}},
		{"hvp damping as flag", errs.Fix([]hvp.Option{hvp.OptDamping}, "%w: eigenvalue 0 + lambda is exactly 0", hvp.ErrIndefinite),
			[]string{"hvp: the damped curvature is not positive definite: eigenvalue 0 + lambda is exactly 0 (--damping)"}},
		{"an option without a flag is left out", errs.Fix([]hvp.Option{hvp.OptScale, hvp.OptDamping}, "%w: the scale is too small", hvp.ErrDiverged),
			[]string{"hvp: the LiSSA recursion diverged: the scale is too small (--damping)"}},
		{"no flag at all: no parentheses", errs.Fix([]hvp.Option{hvp.OptSubsample}, "hvp: no loss weight"),
			[]string{"hvp: no loss weight"}},
		{"layout as flag", errs.Fix([]audit.Option{audit.OptLayout}, "audit: the model's input layout is not known: batch-first or time-first"),
			[]string{"audit: the model's input layout is not known: batch-first or time-first (--layout)"}},
		{"blocks option named by audit", &contextError{"m.onnx", errs.Fix([]audit.Option{blocks.OptFeatures}, "audit: the model takes 3 features")},
			[]string{"m.onnx: the model takes 3 features (--features)"}},
		{"a list of option errors", errs.Wrapf(errs.List{errs.Fix([]audit.Option{audit.OptRank}, "bad rank"), errs.Fix([]audit.Option{audit.OptSolver, audit.OptRetrain}, "no steps")}, "ctx: "),
			[]string{"ctx: 2 problems:", "\tbad rank (--rank)", "\tno steps (--solver, --retrain)"}},
		{"contexts in a row", errs.Wrapf(errs.Wrapf(errs.Fix([]hvp.Option{hvp.OptDamping}, "%w: eigenvalue 0 + lambda is exactly 0", hvp.ErrIndefinite), "hvp: job 2: "), "audit: block 3: "),
			[]string{"audit: block 3: hvp: job 2: hvp: the damped curvature is not positive definite: eigenvalue 0 + lambda is exactly 0 (--damping)"}},
		{"a list of one is its problem", errs.Wrapf(errs.List{errs.Fix([]audit.Option{audit.OptRank}, "bad rank")}, "ctx: "),
			[]string{"ctx: bad rank (--rank)"}},
		{"a message is not taken apart: fmt.Errorf's context is not errs.Context", fmt.Errorf("ctx: %w", errs.Fix([]audit.Option{audit.OptRank}, "bad rank")),
			[]string{"ctx: bad rank (audit.Options.Rank)"}},
		{"a list below fmt.Errorf is its message, whole", fmt.Errorf("ctx: %w", graph.ErrorList{errors.New("a"), errors.New("b")}),
			[]string{"ctx: 2 problems:", "\ta", "\tb"}},
		{"option names in a plain message are not rewritten", errors.New("hvp: eigenvalue 0 (Options.Damping)"),
			[]string{"hvp: eigenvalue 0 (Options.Damping)"}},
		{"errors.Join is not a list of the module", fmt.Errorf("reading: %w", errors.Join(errors.New("one"), errors.New("two\ndetail"))),
			[]string{"reading: one"}},
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

	// The same problem at several lines of a file is one line with the
	// lines counted, at the place of its first; other problems, and a
	// problem at one line, are written as they are.
	bad := func(line int, col, msg string) error {
		return &blocks.DataError{File: "d.csv", Line: line, Column: col, Err: errors.New(msg), Options: []blocks.Option{blocks.OptFeatures}}
	}
	grouped := blocks.ErrorList{bad(2, "x", `"abc" is not a number`), bad(3, "y", "empty"), bad(5, "x", `"abc" is not a number`),
		bad(8, "x", `"abc" is not a number`), bad(9, "y", "empty"), bad(11, "x", `"abc" is not a number`), bad(12, "x", `"n/a" is not a number`),
		&blocks.DataError{File: "d.csv", Line: 14, Err: fmt.Errorf("stopped after 7 problems: %w", blocks.ErrTooMany)}}
	want := []string{"7 problems, and more:",
		`	d.csv: lines 2, 5, 8 and 1 more: column "x": "abc" is not a number (--features)`,
		`	d.csv: lines 3 and 9: column "y": empty (--features)`,
		`	d.csv:12: column "x": "n/a" is not a number (--features)`,
		"	d.csv:14: stopped after 7 problems: too many problems"}
	if got := strings.Split(errorText(grouped), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("grouped:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The reader's count of the lines it did not list (41 lines with the
	// same bad cell, 10 listed) is in the grouped line and the header.
	var csv strings.Builder
	csv.WriteString("id,t,x,y\n")
	for i := range 41 {
		fmt.Fprintf(&csv, "A,%d,abc,1\n", i) // lines 2..42
	}
	_, err := blocks.Read(strings.NewReader(csv.String()), "d.csv", nil)
	want = []string{"41 problems:",
		`	d.csv: lines 2, 3, 4 and 38 more: column "x": "abc" is not a number: write a number such as 1.5 or -2e-3; if the column is not a feature, choose the feature columns (--features)`}
	if got := strings.Split(errorText(err), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("counted:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A list of one that counts more lines is grouped too.
	_, err = blocks.Read(strings.NewReader(csv.String()), "d.csv", &blocks.Options{MaxErrors: 1})
	want[1] = strings.Replace(want[1], "lines 2, 3, 4 and 38 more", "lines 2 and 40 more", 1)
	if got := strings.Split(errorText(err), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("counted, one listed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A line that repeats a long value has its middle elided: at most
	// maxLine bytes, with its beginning and its advice.
	shape := strings.Repeat("1 ", 100_000)
	for _, err := range []error{
		errs.Fix([]audit.Option{audit.OptLayout}, "audit: input has shape [%s]", shape),
		errs.Wrapf(graph.ErrorList{fmt.Errorf("node \"r\": shape [%s] has a negative dimension", shape), errors.New("b")}, "onnx: m.onnx: "),
	} {
		for _, l := range strings.Split(errorText(err), "\n") {
			if len(l) > maxLine+40 || strings.Contains(l, shape[:maxLine]) {
				t.Errorf("a line of %d bytes: %.200q", len(l), l)
			}
		}
	}
	if got := errorText(errs.Fix([]audit.Option{audit.OptLayout}, "audit: input has shape [%s]", shape)); !strings.HasPrefix(got, "audit: input has shape [1 1 1") ||
		!strings.HasSuffix(got, "1 ] (--layout)") || !strings.Contains(got, "bytes elided") {
		t.Errorf("elided: %.300q … %q", got, got[max(len(got)-100, 0):])
	}

	// A long list is capped, with a count of the rest.
	got := strings.Split(errorText(errs.Wrapf(graph.ErrorList(many), "ctx: ")), "\n")
	if len(got) != 1+maxProblems+1 || got[0] != "ctx: 25 problems:" || got[maxProblems] != "\tproblem 20" ||
		got[maxProblems+1] != "\t… and 5 more (25 problems in all)" {
		t.Errorf("capped list: %q", got)
	}
}

// TestFlagOf checks that every option the libraries name in their errors
// maps to the flag that sets it, or to nothing when no flag does: the
// command maps values, so an option missing here would reach the user
// without advice.
func TestFlagOf(t *testing.T) {
	for o, want := range map[errs.Option]string{
		blocks.OptIDCol: "--id-col", blocks.OptTimeCol: "--time-col", blocks.OptTargets: "--target",
		blocks.OptFeatures: "--features", blocks.OptShift: "--shift",
		audit.OptLayout: "--layout", audit.OptSolver: "--solver", audit.OptRank: "--rank",
		audit.OptCurvature: "--curvature", audit.OptParams: "--params", audit.OptRetrain: "--retrain",
		hvp.OptCurvature: "--curvature", hvp.OptDamping: "--damping", hvp.OptScale: "", hvp.OptSubsample: "",
	} {
		if got := flagOf(o); got != want {
			t.Errorf("flagOf(%s) = %q, want %q", o, got, want)
		}
		if want != "" && newFlagSet(&flags{}, nil).Lookup(strings.TrimPrefix(want, "--")) == nil {
			t.Errorf("%s maps to %s, which is not a flag", o, want)
		}
	}
}

// TestOptionErrorsNameFlags: the audit's errors that options fix reach
// the user with this command's flags; the library names the options as
// values (audit.OptSolver, ...), and no message of it holds a flag.
func TestOptionErrorsNameFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--solver", "lowrank", "--retrain", "2"},
			"audit: exact re-training compares per-block parameter steps, which the low-rank solver does not keep: choose the exact, dual or cg solver, or no re-training (--solver, --retrain)\n"},
		{[]string{"--solver", "lowrank", "--blocks", "interval", "--block-length", "2"},
			"audit: the low-rank solver takes sequence blocks, not interval blocks: choose another solver (--solver)\n"},
		{[]string{"--solver", "lowrank", "--curvature", "hessian"},
			"audit: the low-rank solver needs the Gauss-Newton curvature: choose another solver, or the Gauss-Newton curvature (--solver, --curvature)\n"},
	} {
		args := append([]string{"--model", exModel, "--data", exTrain, "--quiet"}, c.args...)
		code, _, stderr := runCmd(args...)
		if code != 1 || stderr != c.want {
			t.Errorf("%q: exit %d, stderr\n%s\nwant 1 and\n%s", c.args, code, stderr, c.want)
		}
	}
}

// TestGroupedDataErrors: audit on a file with the same bad cell on many
// rows writes that problem once, with its first lines and the count of
// all the others (the reader counts past its ten), and a different
// problem on its own line; the message stays a few lines.
func TestGroupedDataErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,t,x,y\n")
	for i := range 40 {
		x := "0.5"
		switch {
		case i%4 == 1:
			x = "abc"
		case i == 6:
			x = "n/a?"
		}
		fmt.Fprintf(&b, "a,%d,%s,1\n", i, x)
	}
	path := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd("--model", exModel, "--data", path, "--quiet")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	want := []string{
		"audit: 11 problems:",
		"\t" + path + `: lines 3, 7, 11 and 7 more: column "x": "abc" is not a number: write a number such as 1.5 or -2e-3; if the column is not a feature, choose the feature columns (--features)`,
		"\t" + path + `:8: column "x": "n/a?" is not a number: write a number such as 1.5 or -2e-3; if the column is not a feature, choose the feature columns (--features)`,
	}
	if code != 1 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, strings.Join(want, "\n"))
	}
}
