package graph_test

import (
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// transformerModels loads every fixture of testdata/transformers (made by
// export.py there) with its graph and inputs.
func transformerModels(t *testing.T) (names []string, fxs []*onnxtest.Fixture, gs []*graph.Graph, ins [][]*graph.Tensor) {
	dir := filepath.Join("testdata", "transformers")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 9 {
		t.Fatalf("%d fixtures in %s, want 9", len(files), dir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		fx, err := onnxtest.ReadFixture(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := fx.Load()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		inputs, err := fx.InputsFor(g)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names, fxs, gs, ins = append(names, name), append(fxs, fx), append(gs, g), append(ins, inputs)
	}
	return names, fxs, gs, ins
}

// TestTransformerModels runs torch 1.13's exports of nn.TransformerEncoder,
// nn.TransformerDecoder, nn.Transformer and nn.MultiheadAttention at opsets
// 13 to 17, batch-first and sequence-first, without masks and with a
// causal float mask (Trilu of -inf), a boolean mask (Where) and a key
// padding mask, and compares with PyTorch's float64 outputs to 1e-10.
func TestTransformerModels(t *testing.T) {
	names, fxs, gs, ins := transformerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			got, err := gs[k].Run(nil, ins[k])
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range fxs[k].Outputs {
				compare(t, o.Name, got[i], o.Tensor(), 1e-10, 1e-10)
			}
		})
	}
}

// TestTransformerModelsDerivatives checks the tangent, backward and
// second-order rules of every Transformer export against central
// differences, and the per-example gradients against backward passes with
// the cotangent restricted to one example (checkExamplesMasked), on the
// example axis of the fixture's layout.
func TestTransformerModelsDerivatives(t *testing.T) {
	names, fxs, gs, ins := transformerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			// The direction is drawn from the fixture's name, so that a
			// fixture added does not move the others' directions: with a
			// step of 1e-6 along all 1,600 parameters a direction may
			// cross the kink of a Relu, where central differences are
			// not the derivative (along the direction of seed 8,
			// transformer_op17 crosses one 1e-7 to 1e-6 away; central
			// differences of step 1e-7 agree with its tangent to 8
			// digits).
			seed := fnv.New64a()
			seed.Write([]byte(name))
			checkDerivatives(t, gs[k], ins[k], rand.New(rand.NewPCG(seed.Sum64(), 23)))
			axis := 0
			if fxs[k].Layout == "time-first" {
				axis = 1
			}
			checkExamplesMasked(t, gs[k], ins[k], axis)
		})
	}
}
