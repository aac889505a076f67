// Package onnxtest loads the reference models that tests of several
// packages share: the models exported by PyTorch in onnx/testdata/pytorch,
// with their inputs and PyTorch's float64 outputs. It lives under onnx
// because it decodes ONNX files: graph never imports onnx.
package onnxtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// Tensor is a tensor as written in a fixture file.
type Tensor struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
	DType string    `json:"dtype"`
}

// Tensor converts to a graph tensor (Int for integer dtypes).
func (f Tensor) Tensor() *graph.Tensor {
	if strings.HasPrefix(f.DType, "int") {
		v := make([]int64, len(f.Data))
		for i, x := range f.Data {
			v[i] = int64(x)
		}
		return graph.NewInt(f.Shape, v)
	}
	return graph.NewFloat(f.Shape, append([]float64(nil), f.Data...))
}

// Fixture is one exported model with a reference evaluation.
type Fixture struct {
	Name    string   `json:"-"`
	Model   string   `json:"model"`
	Layout  string   `json:"layout"`
	Inputs  []Tensor `json:"inputs"`
	Outputs []Tensor `json:"outputs"`
	Dir     string   `json:"-"`
}

// Load decodes the fixture's model.
func (f *Fixture) Load() (*graph.Graph, error) {
	return onnx.Load(filepath.Join(f.Dir, f.Model))
}

// InputsFor returns the fixture's inputs in the order of g.Inputs.
func (f *Fixture) InputsFor(g *graph.Graph) ([]*graph.Tensor, error) {
	var out []*graph.Tensor
	for _, in := range g.Inputs {
		found := false
		for _, fi := range f.Inputs {
			if fi.Name == in.Name {
				out = append(out, fi.Tensor())
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("fixture %s has no input %q", f.Name, in.Name)
		}
	}
	return out, nil
}

// ReadFixture reads the fixture name (the file name.json) of folder dir:
// the model it names lies in dir too.
func ReadFixture(dir, name string) (*Fixture, error) {
	f := filepath.Join(dir, name+".json")
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	fx := &Fixture{Dir: dir, Name: name}
	if err := json.Unmarshal(b, fx); err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	return fx, nil
}

// PyTorchDir is the folder of the PyTorch fixtures.
func PyTorchDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "pytorch")
}

// PyTorch returns every PyTorch fixture, sorted by name.
func PyTorch() ([]*Fixture, error) {
	dir := PyTorchDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Fixture
	for _, f := range files {
		if filepath.Base(f) == "operators.json" {
			continue
		}
		fx, err := ReadFixture(dir, strings.TrimSuffix(filepath.Base(f), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, fx)
	}
	if len(out) < 20 {
		return nil, fmt.Errorf("PyTorch fixtures missing from %s (%d found)", dir, len(out))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
