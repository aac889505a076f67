package audit_test

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// longDir holds four long series and a small RNN trained on them
// (testdata/longseries/make.py).
const longDir = "testdata/longseries"

func longSeries(t *testing.T) (g *graph.Graph, train, test *blocks.Dataset) {
	t.Helper()
	g, err := onnx.Load(filepath.Join(longDir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if train, err = blocks.ReadFile(filepath.Join(longDir, "train.csv"), nil); err != nil {
		t.Fatal(err)
	}
	if test, err = blocks.ReadFile(filepath.Join(longDir, "test.csv"), nil); err != nil {
		t.Fatal(err)
	}
	return g, train, test
}

// only keeps the sequence id of d.
func only(d *blocks.Dataset, id string) *blocks.Dataset {
	out := *d
	out.Seqs = nil
	for _, s := range d.Seqs {
		if s.ID == id {
			out.Seqs = append(out.Seqs, s)
		}
	}
	return &out
}

// TestPooledLongSeries: with interval blocks, four long sequences (and
// one alone) get bounded intervals on a test period that continues them: the
// residuals are pooled across rows after a warm-up of one block, where by
// position each row has four residuals (one), fewer than the 9 that alpha 0.1
// needs (interval.MinResiduals), and every interval was unbounded.
func TestPooledLongSeries(t *testing.T) {
	g, train, test := longSeries(t)
	for _, tc := range []struct {
		name        string
		train, test *blocks.Dataset
	}{
		{"four series", train, test},
		{"one series", only(train, "A"), only(test, "A")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := audit.Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 40, Workers: 2}
			res, err := audit.Run(context.Background(), g, tc.train, tc.test, &o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Setting.Pooling != string(audit.PoolRows) || res.Setting.Warmup != 40 {
				t.Errorf("pooling %q with warm-up %d, want rows after 40", res.Setting.Pooling, res.Setting.Warmup)
			}
			s := res.Summary
			if s.Infinite != 0 || s.Points != 120*tc.test.Len() {
				t.Errorf("%d of %d intervals unbounded, want 0 of %d", s.Infinite, s.Points, 120*tc.test.Len())
			}
			// Every test row continues its training sequence: rows 400 on,
			// each with the residuals of every block at rows 40 to 399.
			want := (400 - 40) * tc.train.Len()
			for _, q := range res.Sequences {
				for _, st := range q.Steps {
					if st.Row < 400 || st.M != want {
						t.Fatalf("sequence %s: row %d with %d residuals, want rows from 400 with %d", q.ID, st.Row, st.M, want)
					}
				}
			}
			if !(s.Coverage > 0.7) {
				t.Errorf("coverage %.3f", s.Coverage)
			}
			o.Pooling = audit.PoolPosition
			o.Restart = true
			res, err = audit.Run(context.Background(), g, tc.train, tc.test, &o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary.Infinite != res.Summary.Points {
				t.Errorf("by position: %d of %d intervals unbounded, want all", res.Summary.Infinite, res.Summary.Points)
			}
		})
	}
}

// TestContinuation: a test file whose sequences continue the training
// ones (same ids, later steps) is run after the training rows, and its
// predictions equal PyTorch's forward pass over the concatenated rows
// (testdata/longseries/continued.csv); with Restart they do not.
func TestContinuation(t *testing.T) {
	g, train, test := longSeries(t)
	f, err := os.Open(filepath.Join(longDir, "continued.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]float64{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		want[[2]string{r[0], r[1]}] = v
	}
	o := audit.Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 40, Workers: 2}
	res, err := audit.Run(context.Background(), g, train, test, &o)
	if err != nil {
		t.Fatal(err)
	}
	n, worst := 0, 0.0
	for _, q := range res.Sequences {
		for _, st := range q.Steps {
			w, ok := want[[2]string{q.ID, strconv.FormatFloat(st.Step, 'f', -1, 64)}]
			if !ok {
				t.Fatalf("sequence %s step %g has no reference", q.ID, st.Step)
			}
			worst = math.Max(worst, math.Abs(st.Prediction-w))
			n++
		}
	}
	if n != len(want) || worst > 1e-10 {
		t.Errorf("%d of %d predictions compared, largest difference %.3g from the forward pass over the concatenated rows", n, len(want), worst)
	}
	o.Restart = true
	res, err = audit.Run(context.Background(), g, train, test, &o)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Sequences[0].Steps[0]
	if st.Row != 0 || math.Abs(st.Prediction-want[[2]string{"A", "400"}]) < 1e-6 {
		t.Errorf("restarted: row %d prediction %g, want row 0 and a prediction from the zero state", st.Row, st.Prediction)
	}
}

// TestRetrainWarm: on the long-series model, stopped early by Adam (its
// stationarity ratio, 0.52, is above StationarityBound), exact
// re-training by default skips the full re-fit and warm-starts every
// block re-fit from the trained parameters (tilted), with 0 iterations
// for the full re-fit; each block's iterations are counted up to the cap
// (5 here) and its outcome matches them. RetrainFull runs the full re-fit
// first. (Without the cap these interval-block re-fits do not converge
// in 200 Newton steps: removing 10% of each series moves this RNN far.)
func TestRetrainWarm(t *testing.T) {
	g, train, test := longSeries(t)
	o := audit.Options{Layout: graph.BatchFirst, Blocks: blocks.Intervals, BlockLength: 40, Workers: 2, Retrain: 2, RetrainMaxIter: 5, Seed: 2}
	res, err := audit.Run(context.Background(), g, train, test, &o)
	if err != nil {
		t.Fatal(err)
	}
	rr := res.Retrain
	t.Logf("stationarity %.3g; outcomes %q, iterations %v, cosines %.3f", res.Diag.Stationarity, rr.Outcomes, rr.Iterations, rr.Cosine)
	if !(res.Diag.Stationarity > audit.StationarityBound) {
		t.Fatalf("stationarity ratio %.3g: the model is at a stationary point, the test needs one stopped early", res.Diag.Stationarity)
	}
	if !rr.Warm || !rr.Tilted || rr.FullIterations != 0 {
		t.Errorf("warm %v tilted %v, full re-fit %d iterations; want a warm start without a full re-fit", rr.Warm, rr.Tilted, rr.FullIterations)
	}
	for k, it := range rr.Iterations {
		want := audit.OutcomeNotConverged
		if rr.Converged[k] {
			want = audit.OutcomeConverged
		}
		if it < 1 || it > 5 || rr.Outcomes[k] != want || (!rr.Converged[k] && it != 5) {
			t.Errorf("block %s: %q after %d iterations (converged %v)", rr.Blocks[k], rr.Outcomes[k], it, rr.Converged[k])
		}
	}
	o.RetrainStart = audit.RetrainFull
	res, err = audit.Run(context.Background(), g, train, test, &o)
	if err != nil {
		t.Fatal(err)
	}
	if rr := res.Retrain; rr.Warm || rr.FullIterations == 0 {
		t.Errorf("full: warm %v after a full re-fit of %d iterations", rr.Warm, rr.FullIterations)
	}
}
