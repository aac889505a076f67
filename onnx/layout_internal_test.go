package onnx

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayoutPyTorch checks both ways of detecting the layout on the PyTorch
// exports in testdata/pytorch, whose JSON files give the true layout: the
// dimension names, and the graph structure alone (as if the names were
// missing).
func TestLayoutPyTorch(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "pytorch", "*.json"))
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Model  string `json:"model"`
			Layout string `json:"layout"`
		}
		if err := json.Unmarshal(data, &fx); err != nil || fx.Model == "" {
			continue // not a fixture description
		}
		n++
		g, err := Load(filepath.Join("testdata", "pytorch", fx.Model))
		if err != nil {
			t.Errorf("%s: %v", fx.Model, err)
			continue
		}
		if got, reason := DetectLayout(g); got.String() != fx.Layout || !strings.HasPrefix(reason, "dimension names") {
			t.Errorf("%s: got %v (%s), want %s from the dimension names", fx.Model, got, reason, fx.Layout)
		}
		if got, reason := layoutFromGraph(g, g.Inputs[0].Name); got.String() != fx.Layout {
			t.Errorf("%s: from the graph: got %v (%s), want %s", fx.Model, got, reason, fx.Layout)
		}
	}
	if n == 0 {
		t.Fatal("no PyTorch fixtures in testdata/pytorch")
	}
}
