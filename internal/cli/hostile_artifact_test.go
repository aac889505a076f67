package cli

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// seedArtifact is the small committed artifact of audit/testdata/artifact
// (a fit of model_small.onnx on four sequences), whose recorded model
// path is relative to the repository's root.
const seedArtifact = "../../audit/testdata/artifact/steps.rna"

// artifactEdit makes a.rna in a case's directory from the seed artifact:
// hdr, if set, edits its JSON header; edit, if set, its bytes (given the
// offset of its raw float section) and returns them; seal says whether its SHA-256 is then
// computed again, as a forger would.
func artifactEdit(hdr func(h map[string]any), edit func(b []byte, raw int) []byte, seal bool) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		b, err := os.ReadFile(seedArtifact)
		if err != nil {
			t.Fatal(err)
		}
		n := int(binary.LittleEndian.Uint32(b[18:]))
		if hdr != nil {
			var h map[string]any
			if err := json.Unmarshal(b[70:70+n], &h); err != nil {
				t.Fatal(err)
			}
			hdr(h)
			hj, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b[:70:70], hj...), b[70+n:]...)
			n = len(hj)
			binary.LittleEndian.PutUint32(b[18:], uint32(n))
		}
		if edit != nil {
			b = edit(b, 70+n+int(binary.LittleEndian.Uint64(b[22:])))
		}
		if seal {
			s := sha256.New()
			s.Write(b[:38])
			s.Write(b[70:])
			copy(b[38:70], s.Sum(nil))
		}
		if err := os.WriteFile(filepath.Join(dir, "a.rna"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

// TestHostileArtifacts is the catalogue's class 8: damaged and forged
// artifacts and special files given as --load, as the recorded model or
// as --config. Each must end in exit 1 or 2 with a short message naming
// the file and what failed, within the memory budget, changing nothing
// and leaving nothing behind (runHostileCases); a damaged artifact never
// yields an answer.
func TestHostileArtifacts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the catalogue's limits use Linux's setrlimit and rusage")
	}
	model, data := absPath(t, exModel), absPath(t, exTrain)
	predict := func(load string, more ...string) []string {
		return append([]string{"predict", "--load", load, "--data", data, "--quiet", "--out", "r.json"}, more...)
	}
	withModel := predict("a.rna", "--model", model)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	nan := math.Float64bits(math.NaN())
	cases := []hostileCase{
		{name: "truncated", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { return b[:len(b)-100] }, false), want: []string{"--load a.rna", "the file is truncated or damaged"}},
		{name: "a flipped exponent bit in the floats", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { b[raw+7] ^= 0x10; return b }, false),
			want:  []string{"--load a.rna", "its bytes have SHA-256", "the file is damaged"}},
		{name: "a NaN written over a step", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { binary.LittleEndian.PutUint64(b[raw:], nan); return b }, false),
			want:  []string{"--load a.rna", "the file is damaged"}},
		{name: "a NaN in a step, resealed", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { binary.LittleEndian.PutUint64(b[raw:], nan); return b }, true),
			want:  []string{"--load a.rna", "(finite)", "the file is damaged"}},
		{name: "an Inf in the training rows, resealed", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte {
				binary.LittleEndian.PutUint64(b[len(b)-8:], math.Float64bits(math.Inf(1)))
				return b
			}, true),
			want: []string{"--load a.rna", "training rows hold a value that is not finite"}},
		{name: "a body length of 1e12", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { binary.LittleEndian.PutUint64(b[22:], 1e12); return b }, true),
			want:  []string{"--load a.rna", "a body of 1000000000000 bytes"}},
		{name: "a raw length of 8 GB", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { binary.LittleEndian.PutUint64(b[30:], 8e9); return b }, true),
			want:  []string{"--load a.rna", "its lengths say", "truncated or damaged"}},
		{name: "format version 4", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { b[14] = 4; return b }, false),
			want:  []string{"--load a.rna", "format version 4", "fit again"}},
		{name: "recorded model /dev/zero", class: 8, args: predict("a.rna"), code: 1,
			setup: artifactEdit(func(h map[string]any) { h["model_path"] = "/dev/zero" }, nil, true),
			want:  []string{"the model recorded in a.rna, /dev/zero", "character device", "give --model"}},
		{name: "recorded model missing", class: 8, args: predict("a.rna"), code: 1,
			setup: artifactEdit(func(h map[string]any) { h["model_path"] = "/nonexistent/m.onnx" }, nil, true),
			want:  []string{"the model recorded in a.rna, /nonexistent/m.onnx, is missing: give --model"}},
		{name: "recorded model missing, damaged", class: 8, args: predict("a.rna"), code: 1,
			setup: artifactEdit(func(h map[string]any) { h["model_path"] = "/nonexistent/m.onnx" }, nil, false),
			want:  []string{"--load a.rna", "the file is damaged"}},
		{name: "load a named pipe", class: 8, args: predict(fifo, "--model", model), code: 1,
			want: []string{"--load " + fifo, "it is a named pipe"}},
		{name: "load a directory", class: 8, args: predict("sub", "--model", model), code: 1,
			setup: mkdir("sub"), want: []string{"--load sub", "it is a directory"}},
		{name: "load a symbolic link loop", class: 8, args: predict("loop.rna", "--model", model), code: 1,
			setup: symlink("loop.rna", "loop.rna"), want: []string{"--load loop.rna", "too many levels of symbolic links"}},
		{name: "load /dev/zero", class: 8, args: predict("/dev/zero", "--model", model), code: 1,
			want: []string{"--load /dev/zero", "character device"}},
		{name: "serve a damaged artifact", class: 8, args: []string{"serve", "--load", "a.rna", "--model", model, "--addr", "127.0.0.1:0"}, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { b[len(b)-3] ^= 1; return b }, false), want: []string{"--load a.rna", "the file is damaged"}},
		{name: "fit a model from a named pipe", class: 8, args: []string{"fit", "--model", fifo, "--data", data, "--ridge", "10", "--save", "x.rna", "--quiet"}, code: 1,
			want: []string{"--model " + fifo, "it is a named pipe"}},
		{name: "config /dev/zero", class: 8, args: []string{"--config", "/dev/zero"}, code: 1,
			want: []string{"--config /dev/zero", "character device"}},
		{name: "config a named pipe", class: 8, args: []string{"--config", fifo}, code: 1,
			want: []string{"--config " + fifo, "it is a named pipe"}},
	}
	// The seed itself predicts: the cases fail for what they change.
	ok := runLimited(t, t.Context(), t.TempDir(), []string{"predict", "--load", absPath(t, seedArtifact), "--model", model, "--data", data, "--quiet"}, "", 0, 0)
	if ok.code != 0 {
		t.Fatalf("the seed artifact does not predict: exit %d, %s", ok.code, ok.stderr)
	}
	runHostileCases(t, cases)
}
