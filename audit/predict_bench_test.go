package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// BenchmarkPredictPaper is audit predict's work on the bundled
// paper-scale example (examples/synthetic: 1000 training and 1000 test
// sequences of 10 steps, the paper's RNN with 481 parameters, ridge 10,
// default solver, estimator and curvature): loading the artifact of a fit
// and predicting the test file's 1000 sequences. Phase times are
// reported as extra metrics (seconds); compare with
// BenchmarkAuditPaper.
func BenchmarkPredictPaper(b *testing.B) {
	g, sum, ds := synthetic(b, "model.onnx", "train.csv", "test.csv")
	train, test := ds[0], ds[1]
	ctx := context.Background()
	f, err := audit.Fit(ctx, g, train, &audit.Options{Layout: graph.BatchFirst, Ridge: 10})
	if err != nil {
		b.Fatal(err)
	}
	var art bytes.Buffer
	if err := f.Save(&art, sum); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(art.Len()), "artifact-bytes")
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("seqs=%d", n), func(b *testing.B) {
			benchPredict(b, art.Bytes(), g, sum, &blocks.Dataset{File: test.File, IDCol: test.IDCol, TimeCol: test.TimeCol,
				Features: test.Features, Targets: test.Targets, Seqs: test.Seqs[:n]})
		})
	}
}

func benchPredict(b *testing.B, art []byte, g *graph.Graph, sum [32]byte, test *blocks.Dataset) {
	ctx := context.Background()
	var res *audit.Result
	var loadTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		loaded, err := audit.Load(bytes.NewReader(art), g, sum)
		loadTime = time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if res, err = loaded.Predict(ctx, test); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(loadTime.Seconds(), "load-s")
	for _, p := range res.Diag.Phases {
		b.ReportMetric(p.Seconds, strings.ReplaceAll(p.Name, " ", "_")+"-s")
	}
}
