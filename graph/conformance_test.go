package graph_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// vectorDir holds the ONNX reference vectors, committed with the onnx
// package that decodes them (onnx/testdata/README.md says where they come
// from).
const vectorDir = "../onnx/testdata"

// skipped lists conformance cases we do not run, with the reason. Every
// other case of the two suites must pass.
var skipped = map[string]string{}

// TestConformance runs every case of the ONNX backend node tests and of the
// recurrent-operator vectors (outputs from ONNX Runtime) and compares with
// max abs error <= 1e-5 + 1e-5*|expected| (NaN equals NaN).
func TestConformance(t *testing.T) {
	for _, suite := range []string{"onnx-conformance", "onnx-recurrent"} {
		dir := filepath.Join(vectorDir, suite)
		cases, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("the reference suite %s is missing (%v): it is committed under onnx/testdata", dir, err)
		}
		n := 0
		for _, c := range cases {
			if !c.IsDir() {
				continue
			}
			n++
			name := c.Name()
			t.Run(suite+"/"+name, func(t *testing.T) {
				if why, ok := skipped[name]; ok {
					t.Skip(why)
				}
				runCase(t, filepath.Join(dir, name))
			})
		}
		if n < 20 {
			t.Errorf("%s: only %d cases found", dir, n)
		}
	}
}

var pbName = regexp.MustCompile(`^(input|output)_(\d+)\.pb$`)

// runCase runs one case directory against its expected outputs.
func runCase(t *testing.T, dir string) { runCaseFolding(t, dir, nil) }

// dataSet holds a case's tensors by file order and by name.
type dataSet struct {
	byIndex []*graph.Tensor
	byName  map[string]*graph.Tensor
}

// take returns the tensor named name, or else the i-th one.
func (d *dataSet) take(name string, i int) *graph.Tensor {
	if t, ok := d.byName[name]; ok {
		return t
	}
	if i < len(d.byIndex) {
		return d.byIndex[i]
	}
	return nil
}

func readDataSet(t *testing.T, dir string) (ins, outs *dataSet) {
	ins = &dataSet{byName: map[string]*graph.Tensor{}}
	outs = &dataSet{byName: map[string]*graph.Tensor{}}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		idx  int
		name string
		t    *graph.Tensor
	}
	var inItems, outItems []item
	for _, f := range files {
		m := pbName.FindStringSubmatch(f.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name, tensor, err := onnx.ReadTensor(b)
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		k, _ := strconv.Atoi(m[2])
		it := item{k, name, tensor}
		if m[1] == "input" {
			inItems = append(inItems, it)
		} else {
			outItems = append(outItems, it)
		}
	}
	fill := func(d *dataSet, items []item) {
		sort.Slice(items, func(i, j int) bool { return items[i].idx < items[j].idx })
		for _, it := range items {
			d.byIndex = append(d.byIndex, it.t)
			if it.name != "" {
				d.byName[it.name] = it.t
			}
		}
	}
	fill(ins, inItems)
	fill(outs, outItems)
	return ins, outs
}

// compare checks got against want elementwise with |got-want| <= abs +
// rel*|want|; NaN matches NaN and infinities must match exactly.
func compare(t *testing.T, name string, got, want *graph.Tensor, abs, rel float64) {
	t.Helper()
	if !equalInts(got.Shape, want.Shape) && !(got.Len() == want.Len() && got.Len() <= 1) {
		t.Errorf("%s: shape %v, want %v", name, got.Shape, want.Shape)
		return
	}
	g, w := got.Float64s(), want.Float64s()
	worst, at := 0.0, -1
	for i := range w {
		switch {
		case math.IsNaN(w[i]) && math.IsNaN(g[i]):
			continue
		case math.IsInf(w[i], 0) || math.IsInf(g[i], 0) || math.IsNaN(g[i]) || math.IsNaN(w[i]):
			if g[i] != w[i] {
				t.Errorf("%s[%d] = %v, want %v", name, i, g[i], w[i])
				return
			}
			continue
		}
		if e := math.Abs(g[i]-w[i]) - rel*math.Abs(w[i]); e > worst {
			worst, at = e, i
		}
	}
	if worst > abs {
		t.Errorf("%s: element %d = %.9g, want %.9g (error beyond tolerance by %.3g)", name, at, g[at], w[at], worst-abs)
	}
}

func equalInts(a, b []int) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}
