package graph_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// pytorchDir holds models exported by PyTorch with their float64 PyTorch
// outputs (see its export.py and README.md).
const pytorchDir = "../onnx/testdata/pytorch"

type fixtureTensor struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
	DType string    `json:"dtype"`
}

func (f fixtureTensor) tensor() *graph.Tensor {
	if f.DType == "int64" || f.DType == "int32" {
		v := make([]int64, len(f.Data))
		for i, x := range f.Data {
			v[i] = int64(x)
		}
		return graph.NewInt(f.Shape, v)
	}
	return graph.NewFloat(f.Shape, append([]float64(nil), f.Data...))
}

type fixture struct {
	Model   string          `json:"model"`
	Layout  string          `json:"layout"`
	Inputs  []fixtureTensor `json:"inputs"`
	Outputs []fixtureTensor `json:"outputs"`
}

func loadFixtures(t testing.TB) map[string]fixture {
	files, err := filepath.Glob(filepath.Join(pytorchDir, "*.json"))
	if err != nil || len(files) < 20 {
		t.Fatalf("PyTorch fixtures missing from %s (%d found, %v)", pytorchDir, len(files), err)
	}
	out := map[string]fixture{}
	for _, f := range files {
		if strings.HasSuffix(f, "operators.json") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = fx
	}
	return out
}

// TestPyTorchModels runs every exported model on its inputs and compares
// with PyTorch's float64 outputs. Both sides compute in float64 from the
// same float32 weights, so agreement is far tighter than the 1e-5 the
// operator suites allow.
func TestPyTorchModels(t *testing.T) {
	for name, fx := range loadFixtures(t) {
		t.Run(name, func(t *testing.T) {
			g, err := onnx.Load(filepath.Join(pytorchDir, fx.Model))
			if err != nil {
				t.Fatal(err)
			}
			var inputs []*graph.Tensor
			for _, in := range g.Inputs {
				found := false
				for _, fi := range fx.Inputs {
					if fi.Name == in.Name {
						inputs = append(inputs, fi.tensor())
						found = true
					}
				}
				if !found {
					t.Fatalf("fixture has no input %q", in.Name)
				}
			}
			got, err := g.Run(nil, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(fx.Outputs) {
				t.Fatalf("%d outputs, fixture has %d", len(got), len(fx.Outputs))
			}
			for i, o := range fx.Outputs {
				compare(t, o.Name, got[i], o.tensor(), 1e-10, 1e-10)
			}
			if want := fx.Layout; want != "" {
				if got, _ := onnx.DetectLayout(g); got.String() != want {
					t.Errorf("layout %q, want %q", got, want)
				}
			}
		})
	}
}
