package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestFitPredictContinued: a saved fit continues a test sequence that
// follows a training sequence in time (same id, later steps) as a full
// audit does: on the four long series, whose test file
// continues every training series at row 400, Predict after Save and
// Load gives the Result of Run (every limit and prediction to 1e-12),
// with the exact solver (interval blocks) and the low-rank one (sequence
// blocks); and the continued rows are
// numbered from the training rows, which a fit that kept no
// training rows cannot do.
func TestFitPredictContinued(t *testing.T) {
	g, train, test := longSeries(t)
	b, err := os.ReadFile(filepath.Join(longDir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	ctx := context.Background()
	// The low-rank case trains on each series' first 100 rows (its
	// refinement of four large blocks is slow); the test rows still
	// follow them in time.
	head := *train
	head.Seqs = nil
	for _, s := range train.Seqs {
		head.Seqs = append(head.Seqs, &blocks.Sequence{ID: s.ID, Steps: s.Steps[:100], X: s.X[:100], Y: s.Y[:100]})
	}
	for _, tc := range []struct {
		solver audit.Solver
		blocks blocks.Kind
		train  *blocks.Dataset
	}{
		{audit.Exact, blocks.Intervals, train},
		{audit.LowRank, blocks.Sequences, &head}, // the low-rank solver's only scheme
	} {
		t.Run(string(tc.solver), func(t *testing.T) {
			train, rows := tc.train, tc.train.Seqs[0].Len()
			opt := audit.Options{Layout: graph.BatchFirst, Blocks: tc.blocks, BlockLength: 40, Workers: 2, Solver: tc.solver, Rank: 20}
			want, err := audit.Run(ctx, g, train, test, &opt)
			if err != nil {
				t.Fatal(err)
			}
			if st := want.Sequences[0].Steps[0]; st.Row != rows {
				t.Fatalf("full audit: first test row %d, want %d (continued)", st.Row, rows)
			}
			_, art := fitSaved(t, g, train, &opt, sum)
			loaded, err := audit.Load(bytes.NewReader(art), g, sum)
			if err != nil {
				t.Fatal(err)
			}
			cut := art[:len(art)-8]
			if _, err := audit.Load(bytes.NewReader(cut), g, sum); err == nil || !strings.Contains(err.Error(), "truncated") {
				t.Errorf("Load of an artifact 8 bytes short: error %v, want one saying it is truncated", err)
			}
			got, err := loaded.Predict(ctx, test)
			if err != nil {
				t.Fatal(err)
			}
			if st := got.Sequences[0].Steps[0]; st.Row != rows {
				t.Errorf("predict: first test row %d, want %d (continued)", st.Row, rows)
			}
			w := *want
			w.Diag.Phases, got.Diag.Phases = nil, nil
			if d := diff("Result", reflect.ValueOf(&w), reflect.ValueOf(got)); d != "" {
				t.Errorf("Predict after Load differs from Run: %s", d)
			}
		})
	}
}

// fitSaved fits train with opt and saves the fit, for a model of
// SHA-256 sum: the fit and its artifact.
func fitSaved(t *testing.T, g *graph.Graph, train *blocks.Dataset, opt *audit.Options, sum [32]byte) (*audit.Fitted, []byte) {
	t.Helper()
	f, err := audit.Fit(context.Background(), g, train, opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Save(&buf, sum); err != nil {
		t.Fatal(err)
	}
	return f, buf.Bytes()
}
