package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// seedArtifacts are the small artifacts of testdata/artifact (make.sh
// there writes them), fits of the first four sequences of the small
// synthetic example, with the model and those four sequences.
func seedArtifacts(tb testing.TB) (g *graph.Graph, sum [32]byte, data *blocks.Dataset, arts map[string][]byte) {
	g, sum, ds := synthetic(tb, "model_small.onnx", "train_small.csv")
	data = &blocks.Dataset{File: "tiny.csv", IDCol: ds[0].IDCol, TimeCol: ds[0].TimeCol, Features: ds[0].Features, Targets: ds[0].Targets, Shift: ds[0].Shift, Seqs: ds[0].Seqs[:4]}
	arts = map[string][]byte{}
	for _, name := range []string{"steps.rna", "lowrank.rna"} {
		b, err := os.ReadFile(filepath.Join("testdata", "artifact", name))
		if err != nil {
			tb.Fatal(err)
		}
		arts[name] = b
	}
	return g, sum, data, arts
}

// reseal writes over b's SHA-256 the one of its other bytes (bytes 38
// to 70 of an artifact hold the SHA-256 of the rest), so that a forged
// artifact passes the checksum and reaches the checks after it.
func reseal(b []byte) []byte {
	if len(b) < 70 {
		return b
	}
	b = bytes.Clone(b)
	h := sha256.New()
	h.Write(b[:38])
	h.Write(b[70:])
	copy(b[38:70], h.Sum(nil))
	return b
}

// TestSeedArtifacts checks that the committed seed artifacts load and
// predict: they must be of the current format version for FuzzLoad to
// reach past the header.
func TestSeedArtifacts(t *testing.T) {
	g, sum, data, arts := seedArtifacts(t)
	for name, b := range arts {
		f, err := audit.Load(bytes.NewReader(b), g, sum)
		if err != nil {
			t.Fatalf("%s: %v (after a change of the format, run bash audit/testdata/artifact/make.sh)", name, err)
		}
		res, err := f.Predict(context.Background(), data)
		if err != nil {
			t.Fatalf("%s: predict: %v", name, err)
		}
		if len(res.Sequences) != 4 {
			t.Errorf("%s: %d sequences predicted, want 4", name, len(res.Sequences))
		}
		// One flipped bit anywhere after the magic and the version is
		// refused: the lengths or the SHA-256 disagree.
		for _, at := range []int{20, 30, 40, 80, len(b) / 2, len(b) - 1} {
			bad := bytes.Clone(b)
			bad[at] ^= 0x10
			if _, err := audit.Load(bytes.NewReader(bad), g, sum); err == nil {
				t.Errorf("%s with bit 4 of byte %d flipped: loaded", name, at)
			}
		}
	}
}

// FuzzLoad checks that Load (and Predict after a Load that succeeds)
// never panics on any bytes: as they are (which the SHA-256 refuses
// unless they are an artifact's) and resealed with the SHA-256 of their
// bytes, as a forger would, so that the checks after the checksum see
// them too.
func FuzzLoad(f *testing.F) {
	g, sum, data, arts := seedArtifacts(f)
	for _, b := range arts {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, sealed bool) {
		if sealed {
			b = reseal(b)
		}
		fit, err := audit.Load(bytes.NewReader(b), g, sum)
		if err != nil {
			return
		}
		fit.Predict(context.Background(), data)
	})
}
