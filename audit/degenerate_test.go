package audit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// firstSequences writes the rows of the small synthetic example's first
// n training sequences (10 steps each) to a file and reads it.
func firstSequences(t *testing.T, n int) *blocks.Dataset {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(exampleDir, "train_small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	keep := lines[:1+10*n] // the header and n sequences of 10 rows
	path := filepath.Join(t.TempDir(), "train.csv")
	if err := os.WriteFile(path, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := blocks.ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != n {
		t.Fatalf("%d sequences read, want %d", d.Len(), n)
	}
	return d
}

// TestDegenerateSchemes: a scheme whose every block deletes the whole
// training set is refused with the option that fixes it:
// nested blocks over one sequence (block (1, j) is sequence 1 and more),
// and interval blocks as long as the one sequence (which fall back to a
// single sequence block). Interval blocks of 3 steps on that sequence,
// and nested blocks over two sequences, are audited.
func TestDegenerateSchemes(t *testing.T) {
	g, err := onnx.Load(filepath.Join(exampleDir, "model_small.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	one, two := firstSequences(t, 1), firstSequences(t, 2)
	for _, tc := range []struct {
		name  string
		train *blocks.Dataset
		kind  blocks.Kind
		k     int
		opt   audit.Option // "" for no error
		want  string
	}{
		{"nested, one sequence", one, blocks.Nested, 3, audit.OptBlocks, "nested blocks on a single training sequence"},
		{"interval as long as the sequence", one, blocks.Intervals, 10, audit.OptBlockLength, "interval blocks of length 10 leave fewer than two intervals"},
		{"nested as long as the sequence", one, blocks.Nested, 12, audit.OptBlockLength, "nested blocks of length 12"},
		{"interval, one sequence", one, blocks.Intervals, 3, "", ""},
		{"nested, two sequences", two, blocks.Nested, 5, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := audit.Run(context.Background(), g, tc.train, tc.train,
				&audit.Options{Layout: graph.BatchFirst, Ridge: exampleRidge, Blocks: tc.kind, BlockLength: tc.k})
			if tc.opt == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if res.Setting.Blocks != tc.kind.String() || res.Setting.NumBlocks < 2 {
					t.Errorf("scheme %s with %d blocks, want %s", res.Setting.Blocks, res.Setting.NumBlocks, tc.kind)
				}
				return
			}
			var oe *audit.OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("error %v, want an *audit.OptionError", err)
			}
			if !slices.Equal(oe.Options, []audit.Option{tc.opt}) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q naming %v, want %q naming %s", err, oe.Options, tc.want, tc.opt)
			}
		})
	}
}
