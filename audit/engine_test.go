package audit_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/reports"
)

// workerExecutor is a test executor that does what a distributed engine
// does with a stage: it sends the encoded chunks to a worker that built
// its own problem from the same inputs (audit.NewWorker, once), decodes
// the shared value there, and runs the chunks in reverse order, or
// mangles them as told.
type workerExecutor struct {
	newWorker func() (*audit.Worker, error)
	once      sync.Once
	w         *audit.Worker
	err       error
	// chunks counts the chunks run per stage.
	chunks map[table.StageKind]int
	// drop leaves out the last output of that stage; garble truncates it.
	drop, garble table.StageKind
}

func (e *workerExecutor) Execute(ctx context.Context, s *table.Stage, emit func(int, []byte) error) error {
	e.once.Do(func() { e.w, e.err = e.newWorker() })
	if e.err != nil {
		return e.err
	}
	r, err := e.w.Runner(s.Kind, bytes.Clone(s.Shared))
	if err != nil {
		return err
	}
	if e.chunks == nil {
		e.chunks = map[table.StageKind]int{}
	}
	for c := len(s.Chunks) - 1; c >= 0; c-- {
		if e.drop == s.Kind && c == len(s.Chunks)-1 {
			continue
		}
		out, err := r.Run(ctx, bytes.Clone(s.Chunks[c]))
		if err != nil {
			return err
		}
		if e.garble == s.Kind {
			out = out[:len(out)-3]
		}
		e.chunks[s.Kind]++
		if err := emit(c, out); err != nil {
			return err
		}
	}
	return nil
}

// smallSynthetic reads the small synthetic study: the model, 100
// training sequences, 200 test and 200 calibration sequences.
func smallSynthetic(t *testing.T) (*graph.Graph, *blocks.Dataset, *blocks.Dataset, *blocks.Dataset) {
	t.Helper()
	g, _, ds := synthetic(t, "model_small.onnx", "train_small.csv", "test_small.csv", "cal_small.csv")
	return g, ds[0], ds[1], ds[2]
}

// TestExecutorSameJSON runs the LowRank audit of the small synthetic
// study in process and through a test executor whose worker rebuilt the
// problem and runs every stage's chunks from their encodings in reverse
// order: the JSON results are equal byte for byte, with a test and a
// calibration set (Newton steps, per-block rule, a refined block) and in
// a self-audit (each point leaves its own block out).
func TestExecutorSameJSON(t *testing.T) {
	g, train, test, cal := smallSynthetic(t)
	for _, tc := range []struct {
		name string
		test *blocks.Dataset
		cal  *blocks.Dataset
	}{{"test and calibration", test, cal}, {"self-audit", nil, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := func() *audit.Options {
				return &audit.Options{Layout: graph.BatchFirst, Ridge: exampleRidge, Solver: audit.LowRank, Calibration: tc.cal}
			}
			run := func(e table.Executor) []byte {
				o := opts()
				o.Executor = e
				res, err := audit.Run(context.Background(), g, train, tc.test, o)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := reports.WriteJSON(&b, res, nil); err != nil {
					t.Fatal(err)
				}
				return b.Bytes()
			}
			want := run(nil)
			e := &workerExecutor{newWorker: func() (*audit.Worker, error) { return audit.NewWorker(g, train, tc.test, opts()) }}
			got := run(e)
			for _, k := range []table.StageKind{table.StageBlocks, table.StagePoints, table.StageFinalize} {
				if e.chunks[k] < 2 {
					t.Errorf("the executor ran %d chunks of the %s stage, want several", e.chunks[k], k)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the executor's JSON (%d bytes) differs from the in-process run's (%d bytes)", len(got), len(want))
			}
		})
	}
}

// TestExecutorFaults: an executor that loses a chunk's output, or
// corrupts one, ends the audit with an error naming the stage; so does
// a worker built on other data.
func TestExecutorFaults(t *testing.T) {
	g, train, test, _ := smallSynthetic(t)
	opts := &audit.Options{Layout: graph.BatchFirst, Ridge: exampleRidge, Solver: audit.LowRank}
	same := func() (*audit.Worker, error) { return audit.NewWorker(g, train, test, opts) }
	for _, tc := range []struct {
		name string
		e    *workerExecutor
		want string
	}{
		{"lost block chunk", &workerExecutor{newWorker: same, drop: table.StageBlocks}, "gave no output of chunk 1 of the blocks stage"},
		{"lost point chunk", &workerExecutor{newWorker: same, drop: table.StagePoints}, "of the points stage"},
		{"garbled finalize chunk", &workerExecutor{newWorker: same, garble: table.StageFinalize}, "finalize stage"},
		{"garbled block chunk", &workerExecutor{newWorker: same, garble: table.StageBlocks}, "decoding a block chunk"},
		{"worker on other data", &workerExecutor{newWorker: func() (*audit.Worker, error) { return audit.NewWorker(g, test, nil, opts) }}, "differ from the driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := *opts
			o.Executor = tc.e
			_, err := audit.Run(context.Background(), g, train, test, &o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// An executor's own error comes back as it is.
	o := *opts
	boom := errors.New("boom")
	o.Executor = failing{boom}
	if _, err := audit.Run(context.Background(), g, train, test, &o); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
}

type failing struct{ err error }

func (f failing) Execute(context.Context, *table.Stage, func(int, []byte) error) error { return f.err }
