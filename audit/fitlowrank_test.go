package audit_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestFitPredictLowRank checks that a fit with the LowRank solver,
// saved and loaded, predicts what a full Run with that solver gives on
// the same test file (every limit of every kind to 1e-12, the
// summaries, the conformal comparison and the diagnostics), on the small
// synthetic example with its calibration split; and that the artifact
// says it holds the low-rank representation.
func TestFitPredictLowRank(t *testing.T) {
	g, sum, ds := synthetic(t, "model_small.onnx", "train_small.csv", "test_small.csv", "cal_small.csv")
	train, test, cal := ds[0], ds[1], ds[2]
	low := 0.0
	opt := audit.Options{Layout: graph.BatchFirst, Ridge: 10, Low: &low, Calibration: cal, Solver: audit.LowRank, Rank: 30}
	ctx := context.Background()
	want, err := audit.Run(ctx, g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if want.Setting.Solver != string(audit.LowRank) {
		t.Fatalf("solver %q, want the low-rank one", want.Setting.Solver)
	}
	f, art := fitSaved(t, g, train, &opt, sum)
	buf := bytes.NewBuffer(art)
	h, err := artifact.ReadHeader(bytes.NewReader(buf.Bytes()))
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

// TestPredictConcurrent checks that Predict may be called from several
// goroutines at once on one Fitted (audit serve does): with the exact
// and the low-rank solver, concurrent predictions of different data sets
// equal sequential ones. Under -race it also checks that Predict writes
// nothing the calls share.
func TestPredictConcurrent(t *testing.T) {
	g, _, ds := synthetic(t, "model_small.onnx", "train_small.csv", "test_small.csv", "cal_small.csv")
	train, test, cal := ds[0], ds[1], ds[2]
	ctx := context.Background()
	parts := []*blocks.Dataset{test, cal}
	for i := range 2 {
		d := *test
		d.Seqs = test.Seqs[i*40 : i*40+30]
		parts = append(parts, &d)
	}
	for _, solver := range []audit.Solver{audit.Exact, audit.LowRank} {
		f, err := audit.Fit(ctx, g, train, &audit.Options{Layout: graph.BatchFirst, Ridge: 10, Solver: solver, Rank: 30})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]*audit.Result, len(parts))
		for i, d := range parts {
			if want[i], err = f.Predict(ctx, d); err != nil {
				t.Fatal(err)
			}
			want[i].Diag.Phases = nil
		}
		got := make([]*audit.Result, len(parts))
		errs := make([]error, len(parts))
		var wg sync.WaitGroup
		for i, d := range parts {
			wg.Go(func() { got[i], errs[i] = f.Predict(ctx, d) })
		}
		wg.Wait()
		for i := range parts {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			got[i].Diag.Phases = nil
			if d := diff("Result", reflect.ValueOf(want[i]), reflect.ValueOf(got[i])); d != "" {
				t.Errorf("%s: concurrent Predict %d differs from a sequential one: %s", solver, i, d)
			}
		}
	}
}
