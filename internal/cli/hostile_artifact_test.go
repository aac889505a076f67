package cli

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/artifact/artifacttest"
)

// seedArtifact is the small committed artifact of audit/testdata/artifact
// (a fit of model_small.onnx on four sequences), whose recorded model
// path is relative to the repository's root.
const seedArtifact = "../../audit/testdata/artifact/steps.rna"

// seedArtifact5 is the same fit in format version 5, which predict still
// reads.
const seedArtifact5 = "../../audit/testdata/artifact/steps5.rna"

// artifactEdit makes a.rna in a case's directory from the seed artifact:
// hdr, if set, edits its JSON header; edit, if set, its bytes (given the
// offset of its raw float section) and returns them; seal says whether its digests are then
// computed again, as a forger would (artifacttest.Reseal).
func artifactEdit(hdr func(h map[string]any), edit func(b []byte, raw int) []byte, seal bool) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		b, err := os.ReadFile(seedArtifact)
		if err != nil {
			t.Fatal(err)
		}
		n := int(binary.LittleEndian.Uint32(b[18:]))
		pre := 50 // the preamble of version 6: magic, version, lengths, three CRC-32C
		if b[14] == 5 {
			pre = 70 // a SHA-256 in their place
		}
		if hdr != nil {
			var h map[string]any
			if err := json.Unmarshal(b[pre:pre+n], &h); err != nil {
				t.Fatal(err)
			}
			hdr(h)
			hj, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b[:pre:pre], hj...), b[pre+n:]...)
			n = len(hj)
			binary.LittleEndian.PutUint32(b[18:], uint32(n))
		}
		if edit != nil {
			b = edit(b, pre+n+int(binary.LittleEndian.Uint64(b[22:])))
		}
		if seal {
			b = artifacttest.Reseal(b)
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
			want:  []string{"--load a.rna", "its float arrays section has CRC-32C", "the file is damaged"}},
		{name: "a flipped bit in the body", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { b[raw-5] ^= 0x10; return b }, false),
			want:  []string{"--load a.rna", "its body section has CRC-32C", "the file is damaged"}},
		{name: "a flipped bit in the header", class: 8, args: withModel, code: 1,
			setup: artifactEdit(nil, func(b []byte, raw int) []byte { b[60] ^= 0x01; return b }, false),
			want:  []string{"--load a.rna", "its header section has CRC-32C", "the file is damaged"}},
		{name: "version 5, a flipped bit in the floats", class: 8, args: withModel, code: 1,
			setup: func(t *testing.T, dir string) []string {
				b, err := os.ReadFile(seedArtifact5)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)-9] ^= 0x10
				if err := os.WriteFile(filepath.Join(dir, "a.rna"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			want: []string{"--load a.rna", "its bytes have SHA-256", "the file is damaged"}},
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
	// The seeds themselves predict: the cases fail for what they change.
	for _, seed := range []string{seedArtifact, seedArtifact5} {
		ok := runLimited(t, t.Context(), t.TempDir(), []string{"predict", "--load", absPath(t, seed), "--model", model, "--data", data, "--quiet"}, "", 0, 0)
		if ok.code != 0 {
			t.Fatalf("the seed artifact %s does not predict: exit %d, %s", seed, ok.code, ok.stderr)
		}
	}
	runHostileCases(t, cases)
}
