package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

const fixtures = "../../onnx/testdata/pytorch"

// The bundled example (examples/synthetic): a vanilla RNN with one
// feature, 100 training and 200 test sequences of 10 steps.
const (
	exModel = "../../examples/synthetic/model_small.onnx"
	exTrain = "../../examples/synthetic/train_small.csv"
	exTest  = "../../examples/synthetic/test_small.csv"
)

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb, nil)
	return code, out.String(), errb.String()
}

func TestInspect(t *testing.T) {
	code, out, errs := runCmd("inspect", "--model", filepath.Join(fixtures, "lstm_packed_bf.onnx"))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"opset 14",
		"x        float  [batch time 2]",
		"lengths  int64  [batch]",
		"Layout: batch-first",
		"LSTM×1",
		"Parameters: 133 in 5 tensors",
		"onnx::LSTM_138    W of LSTM node \"/rnn/LSTM\"",
		"Trial run: 2 sequences of 5 steps give y [2 5 1]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCmd("inspect", "--model", filepath.Join(fixtures, "gru_2l_tf.onnx")); code != 0 || !strings.Contains(out, "Layout: time-first") || !strings.Contains(out, "give y [5 2 1]") {
		t.Errorf("time-first model: exit %d\n%s", code, out)
	}
	if code, out, _ := runCmd("inspect", "--model", filepath.Join(fixtures, "gru_2l_tf.onnx"), "--layout", "batch-first"); code != 0 || !strings.Contains(out, "Layout: batch-first (given by --layout)") {
		t.Errorf("--layout batch-first: exit %d\n%s", code, out)
	}
}

// oneMessage fails unless stderr is one clear line per problem, without a
// stack trace.
func oneMessage(t *testing.T, args []string, stderr string, lines int) {
	t.Helper()
	if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, ".go:") || strings.Contains(stderr, "panic") {
		t.Errorf("%q: stderr has a stack trace: %q", args, stderr)
	}
	if n := strings.Count(strings.TrimSpace(stderr), "\n") + 1; n > lines {
		t.Errorf("%q: %d lines on stderr, want at most %d: %q", args, n, lines, stderr)
	}
	if !strings.HasPrefix(stderr, "audit: ") {
		t.Errorf("%q: stderr does not start with the program name: %q", args, stderr)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	trunc := filepath.Join(dir, "trunc.onnx")
	b, err := os.ReadFile(filepath.Join(fixtures, "paper_rnn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trunc, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr (or stdout for help)
	}{
		{nil, 2, "--model and --data are required"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"--help"}, 0, "Examples:"},
		{[]string{"-h"}, 0, "--block-length K"},
		{[]string{"help"}, 0, "Exit status"},
		{[]string{"inspect", "--help"}, 0, "usage: audit inspect"},
		{[]string{"inspect"}, 2, "--model is required"},
		{[]string{"inspect", "--modle", "x"}, 2, "unknown flag: --modle"},
		{[]string{"inspect", "--model", trunc, "--layout", "sideways"}, 2, `--layout "sideways"`},
		{[]string{"inspect", "--model", filepath.Join(dir, "missing.onnx")}, 1, "missing.onnx: no such file"},
		{[]string{"inspect", "--model", trunc}, 1, "trunc.onnx: not a valid ONNX model"},
		{[]string{"--model", trunc, "--data", exTrain}, 1, "trunc.onnx: not a valid ONNX model"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errs)
		}
		if !strings.Contains(errs+out, tc.want) {
			t.Errorf("%q: output lacks %q: stdout %q stderr %q", tc.args, tc.want, out, errs)
		}
		if code != 0 {
			oneMessage(t, tc.args, errs, 1)
		} else if first := strings.SplitN(out, "\n", 2)[0]; strings.Count(out, first) != 1 {
			t.Errorf("%q: the help text is printed %d times", tc.args, strings.Count(out, first))
		}
	}
}

// TestUsageDocumented checks that the help text (the doc comment) names
// every flag.
func TestUsageDocumented(t *testing.T) {
	text := usage()
	fs := newFlagSet(&flags{}, nil)
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(text, "--"+f.Name+" ") {
			t.Errorf("the help text does not document --%s", f.Name)
		}
	})
}
