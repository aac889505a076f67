package onnx_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// externalPB is a float TensorProto of 2 values kept in file loc from byte
// offset, with its length when length >= 0.
func externalPB(name, loc string, offset, length int) pb {
	entry := func(k, v string) pb { return pb{}.str(1, k).str(2, v) }
	t := pb{}.packed(1, 2).varint(2, 1).str(8, name).bytes(13, entry("location", loc)).bytes(13, entry("offset", strconv.Itoa(offset)))
	if length >= 0 {
		t = t.bytes(13, entry("length", strconv.Itoa(length)))
	}
	return t.varint(14, 1)
}

// externalModel writes, in a new folder, model.onnx computing y = x + w + v
// with w and v kept in the file loc (w at offset 0, v at 8) and, unless
// loc is "", the file weights.bin holding w = [1, 2] and v = [10, 20]
// (data bytes of it when data is not nil). It returns the model's path.
func externalModel(t *testing.T, loc string, data []byte, length int) string {
	t.Helper()
	dir := t.TempDir()
	m := modelPB(14, graphPB(pbs(nodePB("Add", "a1", list("x", "w"), list("a")), nodePB("Add", "a2", list("a", "v"), list("y"))),
		pbs(valueInfoPB("x", 1, 2)), pbs(valueInfoPB("y", 1, 2)),
		pbs(externalPB("w", loc, 0, length), externalPB("v", loc, 8, length))))
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, m, 0o644); err != nil {
		t.Fatal(err)
	}
	if data == nil {
		for _, v := range []float32{1, 2, 10, 20} {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExternalData loads tensors kept beside the model, with and without
// their lengths, and from a folder below the model's.
func TestExternalData(t *testing.T) {
	for _, length := range []int{8, -1} {
		path := externalModel(t, "weights.bin", nil, length)
		g, err := onnx.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := g.Run(nil, []*graph.Tensor{graph.NewFloat([]int{2}, []float64{100, 200})})
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].F; got[0] != 111 || got[1] != 222 {
			t.Errorf("length %d: y = %v, want [111 222]", length, got)
		}
	}
	path := externalModel(t, "sub/weights.bin", nil, 8)
	dir := filepath.Dir(path)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "weights.bin"), filepath.Join(dir, "sub", "weights.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.Load(path); err != nil {
		t.Errorf("a file in a folder below the model's: %v", err)
	}
}

// TestExternalDataRefused checks each refusal: one problem per file,
// naming it and the tensors that need it, never one line per tensor.
func TestExternalDataRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "weights.bin")
	if err := os.WriteFile(secret, make([]byte, 16), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		loc    string
		data   []byte
		length int
		setup  func(dir string)
		want   string
	}{
		{"missing", "gone.bin", nil, 8, nil, `external data file "gone.bin", which 2 tensors ("w", "v") need, is missing: it must lie beside model.onnx, in `},
		{"absolute", secret, nil, 8, nil, `which 2 tensors ("w", "v") need: an absolute path; external data must lie in the model's folder`},
		{"dot-dot", "../" + filepath.Base(outside) + "/weights.bin", nil, 8, nil, `it climbs out with ".."`},
		{"symlink out", "link.bin", nil, 8, func(dir string) {
			if err := os.Symlink(secret, filepath.Join(dir, "link.bin")); err != nil {
				t.Fatal(err)
			}
		}, "it leads out of the model's folder"},
		{"short file", "weights.bin", make([]byte, 12), 8, nil, `initializer "v": bytes 8 to 16 of external data file "weights.bin", which has 12: the file is shorter than the model says`},
		{"wrong length", "weights.bin", nil, 4, nil, `initializer "w": external data length 4 bytes, but its type and dims take 8`},
		{"no location", "", nil, 8, nil, "the model names no file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := externalModel(t, tc.loc, tc.data, tc.length)
			if tc.setup != nil {
				tc.setup(filepath.Dir(path))
			}
			_, err := onnx.Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !errors.Is(err, onnx.ErrExternalData) && !errors.Is(err, onnx.ErrInvalid) {
				t.Errorf("error %v wraps neither ErrExternalData nor ErrInvalid", err)
			}
			if n := strings.Count(err.Error(), `"w"`) + strings.Count(err.Error(), `"v"`); n > 2 || strings.Contains(err.Error(), "problems") {
				t.Errorf("more than one line for one file: %v", err)
			}
		})
	}
}

// TestExternalDataMissingManyTensors checks that a missing file needed by
// many tensors is one line naming the file, the number of tensors and the
// first eight of them, not one line per tensor.
func TestExternalDataMissingManyTensors(t *testing.T) {
	var nodes, inits []pb
	prev := "x"
	for i := range 12 {
		w, out := "w"+strconv.Itoa(i), "a"+strconv.Itoa(i)
		if i == 11 {
			out = "y"
		}
		nodes = append(nodes, nodePB("Add", "add"+strconv.Itoa(i), list(prev, w), list(out)))
		inits = append(inits, externalPB(w, "big.bin", 8*i, 8))
		prev = out
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, modelPB(14, graphPB(nodes, pbs(valueInfoPB("x", 1, 2)), pbs(valueInfoPB("y", 1, 2)), inits)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := onnx.Load(path)
	want := `external data file "big.bin", which 12 tensors ("w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7" and 4 more) need, is missing`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), `"w8"`) {
		t.Fatalf("error %v, want one line saying %q", err, want)
	}
}
