package graph_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/graph/graphtest"
)

// practitionerModels loads every fixture of testdata/practitioners with its
// graph and inputs.
func practitionerModels(t *testing.T) (names []string, fxs []*graphtest.Fixture, gs []*graph.Graph, ins [][]*graph.Tensor) {
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
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fx := &graphtest.Fixture{Name: name, Dir: dir}
		if err := json.Unmarshal(b, fx); err != nil {
			t.Fatalf("%s: %v", f, err)
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

// TestPractitionerModels runs the models of testdata/practitioners (the
// shapes practitioners give recurrent forecasters: CNN-LSTM front ends,
// BatchNorm1d on the inputs, LayerNorm at opsets 14 and 17, GELU,
// attention pooling, Softplus and clamped log-variance heads, and two
// operator probes; made by export.py there) and compares with PyTorch's
// float64 outputs.
func TestPractitionerModels(t *testing.T) {
	names, fxs, gs, ins := practitionerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			got, err := gs[k].Run(nil, ins[k])
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range fxs[k].Outputs {
				compare(t, o.Name, got[i], o.Tensor(), 1e-7, 1e-7)
			}
		})
	}
}

// TestPractitionerModelsExamples checks per-example gradients through the
// new operators (Conv, BatchNormalization, LayerNormalization, attention
// pooling, the reduce, select and binary-function kernels): for every
// practitioner model, batched over its first axis, BackwardExamples must
// give each example the gradient that Backward gives with the output
// cotangent restricted to that example's outputs.
func TestPractitionerModelsExamples(t *testing.T) {
	names, _, gs, ins := practitionerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			g, inputs := gs[k], ins[k]
			p, err := g.Compile(inputs)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := p.Examples([]int{0})
			if err != nil {
				t.Fatal(err)
			}
			theta := g.Theta()
			s := p.NewState()
			outs, err := s.Forward(theta, inputs)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, 8))
			seed := graph.NewFloat(outs[0].Shape, nil)
			for i := range seed.F {
				seed.F[i] = r.NormFloat64()
			}
			N := inputs[0].Shape[0]
			grads := make([][]float64, N)
			for e := range grads {
				grads[e] = make([]float64, len(theta))
			}
			if err := s.BackwardExamples(ex, []*graph.Tensor{seed}, grads); err != nil {
				t.Fatal(err)
			}
			ids := ex.Output(0)
			for e := 0; e < N; e++ {
				masked := graph.NewFloat(seed.Shape, nil)
				for i, id := range ids {
					if int(id) == e {
						masked.F[i] = seed.F[i]
					}
				}
				want := make([]float64, len(theta))
				if err := s.Backward([]*graph.Tensor{masked}, want); err != nil {
					t.Fatal(err)
				}
				for j, w := range want {
					if math.Abs(grads[e][j]-w) > 1e-10*math.Max(1, math.Abs(w)) {
						t.Fatalf("example %d, parameter %d: %.12g, masked backward %.12g", e, j, grads[e][j], w)
					}
				}
			}
		})
	}
}

// TestPractitionerModelsDerivatives checks the tangent, backward and
// second-order rules of every practitioner model against central
// differences, as TestOperatorDerivatives does for single operators.
func TestPractitionerModelsDerivatives(t *testing.T) {
	names, _, gs, ins := practitionerModels(t)
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			checkDerivatives(t, gs[k], ins[k], rand.New(rand.NewPCG(uint64(k), 19)))
		})
	}
}
