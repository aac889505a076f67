package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../../onnx/testdata/pytorch"

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
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
		"LSTM W of /rnn/LSTM",
		"Trial run: 2 sequences of 5 steps give y [2 5 1]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCmd("inspect", "--model", filepath.Join(fixtures, "gru_2l_tf.onnx")); code != 0 || !strings.Contains(out, "Layout: time-first") || !strings.Contains(out, "give y [5 2 1]") {
		t.Errorf("time-first model: exit %d\n%s", code, out)
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
		{nil, 2, "no command given"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"--help"}, 0, "Commands:"},
		{[]string{"inspect", "--help"}, 0, "usage: audit inspect"},
		{[]string{"inspect"}, 2, "--model is required"},
		{[]string{"inspect", "--modle", "x"}, 2, "unknown flag: --modle"},
		{[]string{"inspect", "--model", filepath.Join(dir, "missing.onnx")}, 1, "missing.onnx: no such file"},
		{[]string{"inspect", "--model", trunc}, 1, "trunc.onnx: not a valid ONNX model"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errs)
		}
		if !strings.Contains(errs+out, tc.want) {
			t.Errorf("%q: output lacks %q: stdout %q stderr %q", tc.args, tc.want, out, errs)
		}
		if strings.Contains(errs, "goroutine") || strings.Count(strings.TrimSpace(errs), "\n") > 8 {
			t.Errorf("%q: stderr is not one clear message: %q", tc.args, errs)
		}
	}
}
