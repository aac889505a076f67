package graph_test

import (
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// TestPyTorchModels runs every exported model on its inputs and compares
// with PyTorch's float64 outputs. Both sides compute in float64 from the
// same float32 weights, so agreement is far tighter than the 1e-5 the
// operator suites allow.
func TestPyTorchModels(t *testing.T) {
	fixtures, err := onnxtest.PyTorch()
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
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
			if len(got) != len(fx.Outputs) {
				t.Fatalf("%d outputs, fixture has %d", len(got), len(fx.Outputs))
			}
			for i, o := range fx.Outputs {
				compare(t, o.Name, got[i], o.Tensor(), 1e-10, 1e-10)
			}
			if want := fx.Layout; want != "" {
				if got, _ := onnx.DetectLayout(g); got.String() != want {
					t.Errorf("layout %q, want %q", got, want)
				}
			}
		})
	}
}
