package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/artifact/artifacttest"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// seedArtifacts are the small artifacts of testdata/artifact (make.sh
// there writes them; steps5.rna and lowrank5.rna are of format version
// 5), fits of the first four sequences of the small synthetic example,
// with the model and those four sequences.
func seedArtifacts(tb testing.TB) (g *graph.Graph, sum [32]byte, data *blocks.Dataset, arts map[string][]byte) {
	g, sum, ds := synthetic(tb, "model_small.onnx", "train_small.csv")
	data = &blocks.Dataset{File: "tiny.csv", IDCol: ds[0].IDCol, TimeCol: ds[0].TimeCol, Features: ds[0].Features, Targets: ds[0].Targets, Shift: ds[0].Shift, Seqs: ds[0].Seqs[:4]}
	arts = map[string][]byte{}
	for _, name := range []string{"steps.rna", "lowrank.rna", "steps5.rna", "lowrank5.rna"} {
		b, err := os.ReadFile(filepath.Join("testdata", "artifact", name))
		if err != nil {
			tb.Fatal(err)
		}
		arts[name] = b
	}
	return g, sum, data, arts
}

// TestSeedArtifacts checks that the committed seed artifacts, of both
// versions Load reads, load and predict: FuzzLoad starts from them.
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
		// refused: the lengths or a digest disagree.
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
// never panics on any bytes: as they are (which the digests refuse
// unless they are an artifact's) and resealed with the digests of their
// bytes (artifacttest.Reseal), as a forger would, so that the checks
// after the digests see them too.
func FuzzLoad(f *testing.F) {
	g, sum, data, arts := seedArtifacts(f)
	for _, b := range arts {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, sealed bool) {
		if sealed {
			b = artifacttest.Reseal(b)
		}
		fit, err := audit.Load(bytes.NewReader(b), g, sum)
		if err != nil {
			return
		}
		fit.Predict(context.Background(), data)
	})
}
