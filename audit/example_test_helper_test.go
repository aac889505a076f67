package audit_test

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// synthetic loads the model file model of examples/synthetic, the
// SHA-256 of its file (which Save records and Load checks), and its data
// files named in files, in order.
func synthetic(tb testing.TB, model string, files ...string) (*graph.Graph, [32]byte, []*blocks.Dataset) {
	tb.Helper()
	path := filepath.Join(exampleDir, model)
	g, err := onnx.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var ds []*blocks.Dataset
	for _, name := range files {
		d, err := blocks.ReadFile(filepath.Join(exampleDir, name), nil)
		if err != nil {
			tb.Fatal(err)
		}
		ds = append(ds, d)
	}
	return g, sha256.Sum256(b), ds
}
