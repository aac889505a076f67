package graph_test

import (
	"os"
	"path/filepath"
	"testing"
)

// operatorsSkipped lists the cases of testdata/onnx-operators that
// TestOperatorConformance does not run, with the reason. Every other case
// must pass.
var operatorsSkipped = map[string]string{
	"test_loop11":   "Loop is control flow (a subgraph attribute), not part of the operator families here",
	"test_scan_sum": "Scan is control flow (a subgraph attribute), not part of the operator families here",
	"test_if":       "If is control flow (a subgraph attribute), not part of the operator families here",
	"test_range_float_type_positive_delta": "Range's output shape depends on its float inputs' values; " +
		"float graph inputs are data whose values the compiler does not read (Range works at compile time on constants and integer inputs)",
}

// TestOperatorConformance runs the ONNX backend node tests in
// testdata/onnx-operators (the operators practitioners' exports of
// recurrent models use beyond RNN/LSTM/GRU: elementwise functions,
// reductions, normalisation, convolution and pooling, Einsum, ...; see its
// README for provenance) like TestConformance: forward values against the
// expected outputs, max abs error <= 1e-5 + 1e-5*|expected|, NaN equal to
// NaN.
func TestOperatorConformance(t *testing.T) {
	dir := filepath.Join("testdata", "onnx-operators")
	cases, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		n++
		name := c.Name()
		t.Run(name, func(t *testing.T) {
			if why, ok := operatorsSkipped[name]; ok {
				t.Skip(why)
			}
			runCase(t, filepath.Join(dir, name))
		})
	}
	if n != 102 {
		t.Errorf("%s: %d cases, want 102", dir, n)
	}
}
