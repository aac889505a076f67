package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCommand builds audit-beam (the audit command with the Beam
// executor's flags; without CGO_ENABLED=0, to share the tests' build
// cache) and runs the README's worked example on prism, then
// the same audit without --runner: the JSON files are equal byte for
// byte. With RNNAUDIT_BEAM_PROCESS=1 it runs it again with the workers
// as processes of the binary (environment type process).
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("links the audit-beam binary; not in -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "audit-beam")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	ex := "testdata/" // that example's files, copied
	args := []string{"--model", ex + "model_small.onnx", "--data", ex + "train_small.csv", "--test", ex + "test_small.csv",
		"--calibration", ex + "cal_small.csv", "--ridge", "10", "--solver", "lowrank", "--quiet"}
	var stderr bytes.Buffer
	run := func(name string, extra ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		cmd := exec.Command(bin, append(append(args, extra...), "--json", out)...)
		stderr.Reset()
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr.Bytes())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := run("in-process")
	if got := run("prism", "--runner", "prism"); !bytes.Equal(got, want) {
		t.Errorf("audit-beam --runner prism wrote %d bytes of JSON, the in-process run %d: they differ", len(got), len(want))
	}
	// Beam's and prism's job progress is logged at level INFO, which
	// --beam-log (default warn) leaves out.
	if bytes.Contains(stderr.Bytes(), []byte("level=INFO")) {
		t.Errorf("audit-beam --runner prism --quiet printed Beam's INFO lines:\n%s", stderr.Bytes())
	}
	run("prism-info", "--runner", "prism", "--beam-log", "info")
	if !bytes.Contains(stderr.Bytes(), []byte("level=INFO")) {
		t.Errorf("audit-beam --runner prism --beam-log info printed no INFO line:\n%s", stderr.Bytes())
	}
	if os.Getenv("RNNAUDIT_BEAM_PROCESS") == "" {
		t.Log("RNNAUDIT_BEAM_PROCESS unset: the process-environment run is skipped")
		return
	}
	got := run("process", "--runner", "prism", "--environment-type", "process", "--environment-config", `{"command": "`+bin+`"}`)
	if !bytes.Equal(got, want) {
		t.Errorf("audit-beam with process workers wrote %d bytes of JSON, the in-process run %d: they differ", len(got), len(want))
	}
}
