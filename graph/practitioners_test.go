package graph_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph/graphtest"
)

// TestPractitionerModels runs the models of testdata/practitioners (the
// shapes practitioners give recurrent forecasters: CNN-LSTM front ends,
// BatchNorm1d on the inputs, LayerNorm at opsets 14 and 17, GELU,
// attention pooling, Softplus and clamped log-variance heads, and two
// operator probes; made by export.py there) and compares with PyTorch's
// float64 outputs.
func TestPractitionerModels(t *testing.T) {
	dir := filepath.Join("testdata", "practitioners")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("%d fixtures in %s, want 6", len(files), dir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fx := &graphtest.Fixture{Name: name, Dir: dir}
			if err := json.Unmarshal(b, fx); err != nil {
				t.Fatal(err)
			}
			g, err := fx.Load()
			if err != nil {
				t.Fatal(err)
			}
			inputs, err := fx.InputsFor(g)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Run(nil, inputs)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range fx.Outputs {
				compare(t, o.Name, got[i], o.Tensor(), 1e-7, 1e-7)
			}
		})
	}
}
