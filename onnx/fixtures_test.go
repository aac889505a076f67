package onnx

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// refSuites are the ONNX reference suites committed under testdata
// (testdata/README.md says where they come from).
var refSuites = []string{"testdata/onnx-conformance", "testdata/onnx-recurrent"}

// refCases returns the case directories of the reference suites, failing
// the test when a suite is missing.
func refCases(t testing.TB) []string {
	t.Helper()
	var cases []string
	for _, dir := range refSuites {
		models, err := filepath.Glob(filepath.Join(dir, "*", "model.onnx"))
		if err != nil || len(models) == 0 {
			t.Fatalf("reference suite %s is missing or empty", dir)
		}
		for _, m := range models {
			cases = append(cases, filepath.Dir(m))
		}
	}
	return cases
}

// nodeKey describes a node for comparing decoded nodes with the wire
// reader's.
func nodeKey(name, op, domain string, ins, outs []string) string {
	return fmt.Sprintf("%s %s/%s %q -> %q", name, domain, op, ins, outs)
}

// TestFixtures decodes every reference model and checks the graph against
// what the wire reader reads from the same bytes: the nodes (name,
// operator, inputs and outputs, absent values included), the opset and
// the declared inputs. It then reads every test-data tensor of the case
// and checks it against the graph's inputs and outputs.
func TestFixtures(t *testing.T) {
	t.Parallel()
	for _, dir := range refCases(t) {
		name := filepath.Base(dir)
		data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		g, err := Decode(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		m, err := parseModel(data)
		if err != nil {
			t.Fatalf("%s: wire reader: %v", name, err)
		}
		var want, got []string
		for _, n := range m.graph.nodes {
			if n.domain == "ai.onnx" {
				n.domain = ""
			}
			want = append(want, nodeKey(n.name, n.opType, n.domain, n.inputs, n.outputs))
		}
		for _, n := range g.Nodes {
			got = append(got, nodeKey(n.Name, n.OpType, n.Domain, n.Inputs, n.Outputs))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: nodes:\ngot  %q\nwant %q", name, got, want)
		}
		for _, n := range g.Nodes {
			if n.OpType == "Constant" && len(n.Inputs) != 0 {
				t.Errorf("%s: Constant node %q has inputs %q", name, n.Label(), n.Inputs)
			}
		}
		for _, op := range m.opsets {
			if op.domain == "" && g.Opset != int(op.version) {
				t.Errorf("%s: opset %d, want %d", name, g.Opset, op.version)
			}
		}
		var inputs []graph.ValueInfo
		for _, v := range m.graph.inputs {
			if _, ok := g.Init[v.info.Name]; !ok {
				inputs = append(inputs, v.info)
			}
		}
		if !slices.EqualFunc(g.Inputs, inputs, func(a, b graph.ValueInfo) bool {
			return a.Name == b.Name && a.Elem == b.Elem && slices.Equal(a.Dims, b.Dims)
		}) {
			t.Errorf("%s: inputs %+v, want %+v", name, g.Inputs, inputs)
		}
		checkTestData(t, name, dir, g)
	}
}

// checkTestData reads the case's test_data_set_0/*.pb files and checks
// their names, element kinds and shapes against the graph.
func checkTestData(t *testing.T, name, dir string, g *graph.Graph) {
	files, _ := filepath.Glob(filepath.Join(dir, "test_data_set_0", "*.pb"))
	if len(files) == 0 {
		t.Errorf("%s: no test data", name)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tname, tensor, err := ReadTensor(data)
		if err != nil {
			t.Errorf("%s: %s: %v", name, filepath.Base(f), err)
			continue
		}
		base := filepath.Base(f)
		var k int
		var decl []graph.ValueInfo
		if _, err := fmt.Sscanf(base, "input_%d.pb", &k); err == nil {
			decl = g.Inputs
		} else if _, err := fmt.Sscanf(base, "output_%d.pb", &k); err == nil {
			decl = g.Outputs
		} else {
			t.Errorf("%s: unexpected test data file %s", name, base)
			continue
		}
		i := k
		if tname != "" {
			i = slices.IndexFunc(decl, func(v graph.ValueInfo) bool { return v.Name == tname })
		}
		if i < 0 || i >= len(decl) {
			t.Errorf("%s: %s: tensor %q is not a declared value", name, base, tname)
			continue
		}
		v := decl[i]
		if dt, _ := v.Elem.DType(); dt != tensor.DType {
			t.Errorf("%s: %s: %v tensor for a %v value", name, base, tensor.DType, v.Elem)
		}
		if len(v.Dims) != len(tensor.Shape) {
			t.Errorf("%s: %s: shape %v for declared %s", name, base, tensor.Shape, v.ShapeString())
			continue
		}
		for i, d := range v.Dims {
			if d.Value >= 0 && d.Value != tensor.Shape[i] {
				t.Errorf("%s: %s: shape %v for declared %s", name, base, tensor.Shape, v.ShapeString())
			}
		}
	}
}

// TestCastTestData checks ReadTensor's float16 and double conversion with
// the ONNX Cast cases: the expected output of each is the input converted
// by the reference implementation, NaN and infinities included.
func TestCastTestData(t *testing.T) {
	t.Parallel()
	read := func(path string) *graph.Tensor {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reference fixture missing: %v", err)
		}
		_, x, err := ReadTensor(data)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tc := range []struct {
		name string
		conv func(float64) float64 // from the input's value to the output's
	}{
		{"test_cast_FLOAT16_to_FLOAT", func(x float64) float64 { return x }},
		{"test_cast_DOUBLE_to_FLOAT", func(x float64) float64 { return float64(float32(x)) }},
		{"test_cast_FLOAT_to_DOUBLE", func(x float64) float64 { return x }},
	} {
		dir := filepath.Join(refSuites[0], tc.name, "test_data_set_0")
		in, out := read(filepath.Join(dir, "input_0.pb")), read(filepath.Join(dir, "output_0.pb"))
		if in.Len() != out.Len() || in.Len() == 0 {
			t.Fatalf("%s: %d inputs, %d outputs", tc.name, in.Len(), out.Len())
		}
		special := 0
		for i, x := range in.F {
			want, got := tc.conv(x), out.F[i]
			if math.IsNaN(x) || math.IsInf(x, 0) {
				special++
			}
			if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("%s: value %d: input %v converts to %v, want %v", tc.name, i, x, want, got)
			}
		}
		if special == 0 {
			t.Errorf("%s: no NaN or infinity in the input", tc.name)
		}
	}
}

func TestFloat16(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bits uint16
		want float64
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3555, 0.333251953125},
		{0x7bff, 65504},
		{0x0400, math.Ldexp(1, -14)},    // smallest normal
		{0x0001, math.Ldexp(1, -24)},    // smallest subnormal
		{0x03ff, math.Ldexp(1023, -24)}, // largest subnormal
		{0x7c00, math.Inf(1)},
		{0xfc00, math.Inf(-1)},
	} {
		if got := float16(tc.bits); got != tc.want {
			t.Errorf("float16(%#04x) = %v, want %v", tc.bits, got, tc.want)
		}
	}
	if got := float16(0x8000); got != 0 || !math.Signbit(got) {
		t.Errorf("float16(0x8000) = %v, want -0", got)
	}
	for _, b := range []uint16{0x7c01, 0x7e00, 0xfe00} {
		if got := float16(b); !math.IsNaN(got) {
			t.Errorf("float16(%#04x) = %v, want NaN", b, got)
		}
	}
}
