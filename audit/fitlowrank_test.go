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
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestFitPredictLowRank checks that a fit with the LowRank solver,
// saved and loaded, predicts what a full Run with that solver gives on
// the same test file (every limit of every kind to 1e-12, the
// summaries, the conformal comparison and the diagnostics), on the small
// synthetic example with its calibration split; and that the artifact
// says it holds the low-rank representation.
func TestFitPredictLowRank(t *testing.T) {
	dir := "../examples/synthetic"
	path := filepath.Join(dir, "model_small.onnx")
	g, err := onnx.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(mb)
	read := func(name string) *blocks.Dataset {
		d, err := blocks.ReadFile(filepath.Join(dir, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	train, test, cal := read("train_small.csv"), read("test_small.csv"), read("cal_small.csv")
	low := 0.0
	opt := audit.Options{Layout: audit.BatchFirst, Ridge: 10, Low: &low, Calibration: cal, Solver: audit.LowRank, Rank: 30}
	ctx := context.Background()
	want, err := audit.Run(ctx, g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if want.Setting.Solver != string(audit.LowRank) {
		t.Fatalf("solver %q, want the low-rank one", want.Setting.Solver)
	}
	f, err := audit.Fit(ctx, g, train, &opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Save(&buf, sum); err != nil {
		t.Fatal(err)
	}
	h, err := audit.ReadHeader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if h.Representation != "low-rank" || h.Rank != 30 || h.Blocks != train.Len() {
		t.Errorf("header: representation %q, rank %d, %d blocks; want low-rank, 30, %d", h.Representation, h.Rank, h.Blocks, train.Len())
	}
	loaded, err := audit.Load(bytes.NewReader(buf.Bytes()), g, sum)
	if err != nil {
		t.Fatal(err)
	}
	for name, fit := range map[string]*audit.Fitted{"Fit": f, "Load": loaded} {
		got, err := fit.Predict(ctx, test)
		if err != nil {
			t.Fatal(err)
		}
		if got.Conformal == nil || len(got.Sequences) != test.Len() {
			t.Fatalf("%s: calibrated result %v, %d sequences: want a calibrated result of %d", name, got.Conformal != nil, len(got.Sequences), test.Len())
		}
		w := *want
		w.Diag.Phases, got.Diag.Phases = nil, nil
		if d := diff("Result", reflect.ValueOf(&w), reflect.ValueOf(got)); d != "" {
			t.Errorf("Predict after %s differs from Run: %s", name, d)
		}
	}
	// Re-training stays refused, with a message that says what to do.
	opt.Retrain = 2
	if _, err := audit.Fit(ctx, g, train, &opt); err == nil || !strings.Contains(err.Error(), "full audit") {
		t.Errorf("Fit with Retrain: error %v, want one pointing to a full audit", err)
	}
}
