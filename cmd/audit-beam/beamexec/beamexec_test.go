package beamexec

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/reports"
)

// The small synthetic study of the repository's examples, copied into the
// module's testdata (see its README): 100 training sequences, 200 test and
// 200 calibration sequences, a vanilla RNN.
const exampleDir = "../testdata"

var (
	model = filepath.Join(exampleDir, "model_small.onnx")
	train = filepath.Join(exampleDir, "train_small.csv")
	test  = filepath.Join(exampleDir, "test_small.csv")
	cal   = filepath.Join(exampleDir, "cal_small.csv")
)

// options are the audit's: the LowRank solver, whose stages an executor
// runs, and ridge 10 as the model was trained.
func options() *audit.Options {
	return &audit.Options{Layout: graph.BatchFirst, Ridge: 10, Solver: audit.LowRank}
}

// auditJSON runs the audit of the small study with executor e (nil: in
// process) and returns its JSON result (no timings).
func auditJSON(t *testing.T, e table.Executor) []byte {
	t.Helper()
	g, err := onnx.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := blocks.ReadFile(train, nil)
	if err != nil {
		t.Fatal(err)
	}
	ro := &blocks.Options{Features: tr.Features, Targets: tr.Targets, OptionalTargets: true}
	te, err := blocks.ReadFile(test, ro)
	if err != nil {
		t.Fatal(err)
	}
	o := options()
	if o.Calibration, err = blocks.ReadFile(cal, &blocks.Options{Features: tr.Features, Targets: tr.Targets}); err != nil {
		t.Fatal(err)
	}
	o.Executor = e
	res, err := audit.Run(context.Background(), g, tr, te, o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := reports.WriteJSON(&b, res, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func spec(t *testing.T) table.WorkerSpec {
	t.Helper()
	s, err := NewSpec(model, train, test, cal, ReadSpec{}, options())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countingExecutor counts the stages and chunks it passes on.
type countingExecutor struct {
	*Executor
	stages, chunks int
}

func (c *countingExecutor) Execute(ctx context.Context, s *table.Stage, emit func(int, []byte) error) error {
	c.stages++
	c.chunks += len(s.Chunks)
	return c.Executor.Execute(ctx, s, emit)
}

// sameJSON checks that the audit through an executor of cfg gives the
// in-process run's JSON, byte for byte.
func sameJSON(t *testing.T, want []byte, cfg Config) {
	t.Helper()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ce := &countingExecutor{Executor: e}
	got := auditJSON(t, ce)
	// Three stages (blocks, test points, calibration points) plus the
	// test and calibration limits: five pipeline runs.
	if ce.stages != 5 || ce.chunks < 10 {
		t.Errorf("%d stages of %d chunks in all, want 5 stages and several chunks each", ce.stages, ce.chunks)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the JSON through Beam (%d bytes) differs from the in-process run's (%d bytes)", len(got), len(want))
	}
}

// TestPrismSameJSON runs the stages on prism in this process (loopback
// workers), the chunks in order and reversed.
func TestPrismSameJSON(t *testing.T) {
	want := auditJSON(t, nil)
	for _, rev := range []bool{false, true} {
		sameJSON(t, want, Config{Runner: "prism", Spec: spec(t), Reverse: rev})
	}
}

// TestUniversalSameJSON runs the stages through the universal runner
// against a prism job server, the client path of a Flink or Spark user.
func TestUniversalSameJSON(t *testing.T) {
	want := auditJSON(t, nil)
	endpoint := startJobServer(t)
	sameJSON(t, want, Config{Runner: "universal", Endpoint: endpoint, EnvironmentType: "loopback", Spec: spec(t), Reverse: true})
}

// startJobServer starts a prism job server of its own and returns its
// address.
func startJobServer(t *testing.T) string {
	t.Helper()
	port := freePort(t)
	if _, err := prism.CreateJobServer(context.Background(), prism.Options{Port: port}); err != nil {
		t.Fatal(err)
	}
	return "localhost:" + itoa(port)
}

// TestDataflowDryRun translates a stage's pipeline for Dataflow without
// submitting it (no network, no credentials).
func TestDataflowDryRun(t *testing.T) {
	for name, v := range map[string]string{"dry_run": "true", "project": "rnnaudit-test", "region": "us-central1", "staging_location": "gs://rnnaudit-test/staging"} {
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	defer flag.Set("dry_run", "false")
	e, err := New(context.Background(), Config{Runner: "dataflow", Spec: spec(t), WorkerBinary: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = e.Execute(ctx, &table.Stage{Kind: table.StageFinalize, Shared: []byte("x"), Chunks: [][]byte{[]byte("a"), []byte("b")}}, func(int, []byte) error {
		t.Error("a dry run gave an output")
		return nil
	})
	if !errors.Is(err, ErrDryRun) {
		t.Errorf("error %v, want ErrDryRun", err)
	}
}

// TestCancel cancels a running stage: Execute returns the context's
// error and the job service says the job was cancelled. The stage's
// worker blocks reading its model from a named pipe until the end.
func TestCancel(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.onnx")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes:", err)
	}
	defer func() {
		// Let the blocked worker go: its read ends with nothing.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	s := spec(t)
	s.Model = fifo
	endpoint := startJobServer(t)
	e, err := New(context.Background(), Config{Runner: "universal", Endpoint: endpoint, EnvironmentType: "loopback", Spec: s, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Second, cancel)
	start := time.Now()
	err = e.Execute(ctx, &table.Stage{Kind: table.StageBlocks, Shared: []byte("x"), Chunks: [][]byte{[]byte("a")}}, func(int, []byte) error {
		t.Error("a cancelled stage gave an output")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	t.Logf("cancelled after %v", time.Since(start))
	cc, err := grpcx.Dial(context.Background(), endpoint, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	jobs, err := client.GetJobs(context.Background(), &jobpb.GetJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.GetJobInfo()) != 1 {
		t.Fatalf("%d jobs on the job server, want 1", len(jobs.GetJobInfo()))
	}
	if st := jobs.GetJobInfo()[0].GetState(); st != jobpb.JobState_CANCELLED && st != jobpb.JobState_CANCELLING {
		t.Errorf("the job's state is %v, want CANCELLED", st)
	}
}
