package onnx_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// fuzzMaxInput bounds the elements of the inputs FuzzCompile makes, so
// that a declared dimension of millions does not make the fuzzer itself
// slow.
const fuzzMaxInput = 1 << 16

// FuzzCompile decodes bytes into a graph and, when they decode, compiles
// it for a small batch of zeros and runs it: the shape arithmetic that
// constant folding evaluates at compile time (ConstantOfShape, Expand,
// Range, Reshape of shapes read from the file) is where a few bytes can
// ask for 10^12 elements. Any model must give a program or an error,
// never a panic, an internal error or a tensor over graph.MaxElements.
func FuzzCompile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.onnx"))
	more, _ := filepath.Glob(filepath.Join("testdata", "pytorch", "*_bf.onnx"))
	for _, name := range append(seeds, more[:min(len(more), 4)]...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(lstmModel()))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := onnx.Decode(data)
		if err != nil {
			return
		}
		var inputs []*graph.Tensor
		for _, in := range g.Inputs {
			dims := make([]int, len(in.Dims))
			for i, d := range in.Dims {
				dims[i] = d.Value
				if d.Value < 0 {
					dims[i] = 2 + i%2
				}
			}
			if n, err := graph.CheckShape(dims); err != nil || n > fuzzMaxInput {
				return
			}
			if dt, _ := in.Elem.DType(); dt == graph.Int {
				x := graph.NewInt(dims, nil)
				for i := range x.I {
					x.I[i] = 2
				}
				inputs = append(inputs, x)
			} else {
				inputs = append(inputs, graph.NewFloat(dims, nil))
			}
		}
		p, err := g.Compile(inputs)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("a file reaches an internal error: %v", err)
			}
			return
		}
		outs, err := p.NewState().Forward(g.Theta(), inputs)
		if err != nil {
			return
		}
		for i, o := range outs {
			if o.Len() > graph.MaxElements {
				t.Fatalf("output %d has %d elements", i, o.Len())
			}
		}
	})
}
