// Package beamexec runs the LowRank audit's stages (table.Executor) as
// Apache Beam pipelines, on prism in process, on any portable runner
// through its job service (Flink, Spark), or on Dataflow. It lives in a
// module of its own (cmd/audit-beam) so that the audit module does not
// depend on Beam.
//
// Every stage is one pipeline run (about 170 ms on prism): the driver
// writes the stage's shared value and its chunks to the staging
// location, the pipeline runs each chunk on a worker (audit.Worker,
// built once per worker process from the files and options the
// table.WorkerSpec names) and writes each output to a file of its own,
// and the driver reads the outputs back and gives them to the audit,
// which folds them in chunk order.
package beamexec

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"

	"github.com/rnnaudit/rnnaudit/audit/table"
)

// Config configures an Executor.
type Config struct {
	// Runner is prism (a prism job service in this process: the
	// default), universal (a job service at Endpoint; flink and spark
	// are the same with their job servers) or dataflow.
	Runner string
	// Endpoint is the job service's host:port (universal, flink, spark).
	Endpoint string
	// EnvironmentType is where the workers run: loopback (in this
	// process: prism's default), process, docker (the default of the
	// others) or external; EnvironmentConfig its configuration (process:
	// {"command": "/path/to/audit-beam"}).
	EnvironmentType, EnvironmentConfig string
	// WorkerBinary is the binary the workers run (process and docker
	// environments; Dataflow): by default this very binary, which must
	// then be built for linux/amd64 with CGO_ENABLED=0.
	WorkerBinary string
	// Staging is a directory or URI (gs://bucket/dir, s3://bucket/dir)
	// that the driver and every worker can read and write: the stages'
	// inputs and outputs go there (default: a new local temporary
	// directory, enough for prism and loopback workers). Local files the
	// spec names are copied there when Staging is a URI.
	Staging string
	// Spec names the audit's files and options (NewSpec).
	Spec table.WorkerSpec
	// Progress, when set, is given the chunks done of each stage, from
	// the job's metrics, while it runs.
	Progress func(stage table.StageKind, done, total int)
	// Reverse lists every stage's chunks in reverse order (the result
	// must not change).
	Reverse bool
	// Poll is how often a running job's state and metrics are read
	// (default 500 ms).
	Poll time.Duration
	// Stderr is where the executor writes what the user must act on, such
	// as the command that cancels a Dataflow job it could not (default
	// os.Stderr).
	Stderr io.Writer
	// LogLevel is the least severe of the Beam SDK's and prism's log
	// lines this process writes to its standard error: debug, info, warn
	// or error (default warn, so that a run prints its warnings and
	// errors but not a dozen lines per stage of job progress). Beam
	// logs through the process's default slog logger, so this sets it.
	LogLevel string
}

// LogLevel returns Config.LogLevel s as Beam spells it, or an error
// when it is not one of debug, info, warn (also for "") or error.
func LogLevel(s string) (string, error) {
	switch l := strings.ToLower(s); l {
	case "":
		return "warn", nil
	case "debug", "info", "warn", "error":
		return l, nil
	}
	return "", fmt.Errorf("beamexec: unknown log level %q: debug, info, warn or error", s)
}

// ErrDryRun ends a stage run on Dataflow with --dry_run: the job was
// translated and printed, not submitted.
var ErrDryRun = errors.New("beamexec: dry run: the job was translated, not submitted")

// Executor is an table.Executor over Beam. Close removes what it staged.
type Executor struct {
	cfg    Config
	run    string // the staging directory of this executor
	own    bool   // run was made here (a temporary directory)
	spec   []byte
	mu     sync.Mutex
	stages int
}

var _ table.Executor = (*Executor)(nil)

// New returns an Executor: it sets Beam's flags from cfg (Beam keeps
// its options in the standard flag package), initialises Beam, and
// stages the spec's local files when the staging location is remote.
func New(ctx context.Context, cfg Config) (*Executor, error) {
	if cfg.Runner == "" {
		cfg.Runner = "prism"
	}
	if cfg.Poll == 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	e := &Executor{cfg: cfg}
	switch cfg.Runner {
	case "prism":
		if cfg.EnvironmentType == "" {
			e.cfg.EnvironmentType = "loopback"
		}
	case "universal", "portable", "flink", "spark":
		if cfg.Endpoint == "" {
			return nil, fmt.Errorf("beamexec: the %s runner needs the job service's address: give --endpoint host:port (a Flink or Spark job server listens on 8099)", cfg.Runner)
		}
	case "dataflow":
	default:
		return nil, fmt.Errorf("beamexec: unknown runner %q: prism, universal, flink, spark or dataflow", cfg.Runner)
	}
	if e.cfg.WorkerBinary == "" && !strings.EqualFold(e.cfg.EnvironmentType, "loopback") {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("beamexec: the worker binary: %w (give --worker-binary)", err)
		}
		e.cfg.WorkerBinary = self
	}
	// Every flag is set, empty or not: Beam's flags are the process's,
	// and an earlier executor's must not linger.
	for name, v := range map[string]string{"environment_type": e.cfg.EnvironmentType, "environment_config": cfg.EnvironmentConfig, "worker_binary": e.cfg.WorkerBinary, "endpoint": cfg.Endpoint} {
		if err := flag.Set(name, v); err != nil {
			return nil, fmt.Errorf("beamexec: Beam's --%s: %w", name, err)
		}
	}
	level, err := LogLevel(cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	if !beam.Initialized() {
		beam.Init()
	}
	// After Init, which sets up Beam's logging at its own default level.
	beamlog.SetupLogging(level, "text")
	if cfg.Staging == "" {
		dir, err := os.MkdirTemp("", "rnnaudit-beam-")
		if err != nil {
			return nil, err
		}
		e.run, e.own = dir, true
	} else {
		var r [6]byte
		rand.Read(r[:])
		e.run = strings.TrimSuffix(cfg.Staging, "/") + "/rnnaudit-" + hex.EncodeToString(r[:])
		if !strings.Contains(cfg.Staging, "://") {
			if err := os.MkdirAll(e.run, 0o755); err != nil {
				return nil, err
			}
		}
	}
	if err := e.stageInputs(ctx); err != nil {
		e.Close()
		return nil, err
	}
	if e.spec, err = json.Marshal(e.cfg.Spec); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// stageInputs copies the spec's local files to a remote staging location
// (workers elsewhere cannot read them), and makes local paths absolute.
func (e *Executor) stageInputs(ctx context.Context) error {
	remote := strings.Contains(e.run, "://")
	for _, f := range []struct {
		uri  *string
		name string
	}{{&e.cfg.Spec.Model, "model.onnx"}, {&e.cfg.Spec.Train, "train.csv"}, {&e.cfg.Spec.Test, "test.csv"}, {&e.cfg.Spec.Calibration, "calibration.csv"}} {
		u := *f.uri
		if u == "" || strings.Contains(u, "://") {
			continue
		}
		if !remote {
			abs, err := filepath.Abs(u)
			if err != nil {
				return err
			}
			*f.uri = abs
			continue
		}
		b, err := os.ReadFile(u)
		if err != nil {
			return err
		}
		dst := e.run + "/inputs/" + f.name
		if err := writeRenamed(ctx, dst, b); err != nil {
			return err
		}
		*f.uri = dst
	}
	return nil
}

// Close removes the staging directory when the executor made it.
func (e *Executor) Close() error {
	if e.own {
		return os.RemoveAll(e.run)
	}
	return nil
}

// Execute runs one stage as a pipeline and gives the audit every
// chunk's output. Cancelling ctx cancels the job through the job
// service (Dataflow: its jobs API) and returns ctx's error once the job
// has stopped (Dataflow: is cancelling).
func (e *Executor) Execute(ctx context.Context, s *table.Stage, emit func(int, []byte) error) error {
	e.mu.Lock()
	e.stages++
	dir := fmt.Sprintf("%s/stage-%03d-%s", e.run, e.stages, s.Kind)
	e.mu.Unlock()
	if !strings.Contains(dir, "://") {
		if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
			return err
		}
	}
	if err := writeRenamed(ctx, dir+"/shared.bin", s.Shared); err != nil {
		return err
	}
	if err := writeRenamed(ctx, dir+"/chunks.bin", joinChunks(s.Chunks)); err != nil {
		return err
	}
	p, root := beam.NewPipelineWithRoot()
	imp := beam.Impulse(root)
	elems := beam.ParDo(root, &listFn{Chunks: dir + "/chunks.bin", Reverse: e.cfg.Reverse}, imp)
	elems = beam.Reshuffle(root, elems)
	grads := beam.ParDo(root, &runFn{Spec: e.spec, Kind: int(s.Kind), Shared: dir + "/shared.bin", Out: dir + "/out"}, elems)
	gradName := dir + "/gradient.bin"
	if s.Kind == table.StageBlocks {
		beam.ParDo0(root, &writeFn{Name: gradName}, beam.Combine(root, &gradSumFn{}, grads))
	}
	if err := e.runJob(ctx, p, s.Kind, len(s.Chunks)); err != nil {
		return err
	}
	fs, err := filesystem.New(ctx, dir)
	if err != nil {
		return err
	}
	defer fs.Close()
	// The block stage's outputs come without their gradient sums: their
	// exact sum, from the combiner, goes back with chunk 0's output (the
	// audit adds every output's gradient vectors exactly, so only their
	// sum matters).
	var grad []float64
	if s.Kind == table.StageBlocks {
		b, err := filesystem.Read(ctx, fs, gradName)
		if err != nil {
			return fmt.Errorf("beamexec: the %s stage's job ended without its gradient sum (%s): %w", s.Kind, gradName, err)
		}
		sum := &table.GradientSum{}
		if err := sum.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("beamexec: %s: %w", gradName, err)
		}
		grad = sum.Vectors()
	}
	for c := range s.Chunks {
		name := outName(dir+"/out", c)
		b, err := filesystem.Read(ctx, fs, name)
		if err != nil {
			return fmt.Errorf("beamexec: the %s stage's job ended without the output of chunk %d (%s): %w", s.Kind, c, name, err)
		}
		if c == 0 && s.Kind == table.StageBlocks {
			if b, err = table.PutBlockGradient(b, grad); err != nil {
				return fmt.Errorf("beamexec: %s: %w", name, err)
			}
		}
		if err := emit(c, b); err != nil {
			return err
		}
	}
	return nil
}

// runJob runs the pipeline of a stage on the configured runner.
func (e *Executor) runJob(ctx context.Context, p *beam.Pipeline, kind table.StageKind, total int) error {
	var r [4]byte
	rand.Read(r[:])
	name := fmt.Sprintf("rnnaudit-%s-%s", kind, hex.EncodeToString(r[:]))
	if err := flag.Set("job_name", name); err != nil {
		return err
	}
	if e.cfg.Runner == "dataflow" {
		return e.runDataflow(ctx, p, kind, total)
	}
	endpoint := e.cfg.Endpoint
	if e.cfg.Runner == "prism" {
		var err error
		if endpoint, err = prismEndpoint(ctx); err != nil {
			return err
		}
		if err := flag.Set("endpoint", endpoint); err != nil {
			return err
		}
	}
	cc, err := grpcx.Dial(ctx, endpoint, time.Minute)
	if err != nil {
		return fmt.Errorf("beamexec: connecting to the job service at %s: %w", endpoint, err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	// universal.Execute submits and waits; its context is never
	// cancelled (cancelling prism's kills the process): Ctrl-C cancels
	// the job through the job service instead.
	done := make(chan error, 1)
	go func() {
		_, err := universal.Execute(context.WithoutCancel(ctx), p)
		done <- err
	}()
	tick := time.NewTicker(e.cfg.Poll)
	defer tick.Stop()
	jobID := ""
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("beamexec: the %s stage's job: %w", kind, err)
			}
			if jobID == "" {
				jobID, _ = findJob(ctx, client, name)
			}
			if jobID != "" {
				st, err := client.GetState(context.WithoutCancel(ctx), &jobpb.GetJobStateRequest{JobId: jobID})
				if err == nil && st.GetState() != jobpb.JobState_DONE {
					return fmt.Errorf("beamexec: the %s stage's job %s ended %v", kind, jobID, st.GetState())
				}
			}
			e.progress(kind, total, total)
			return nil
		case <-ctx.Done():
			if jobID == "" {
				jobID, _ = findJob(context.WithoutCancel(ctx), client, name)
			}
			if jobID != "" {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				client.Cancel(cctx, &jobpb.CancelJobRequest{JobId: jobID})
				select {
				case <-done:
				case <-cctx.Done():
				}
				cancel()
			}
			return ctx.Err()
		case <-tick.C:
			if jobID == "" {
				jobID, _ = findJob(ctx, client, name)
				continue
			}
			if n, ok := chunksMetric(ctx, client, jobID); ok {
				e.progress(kind, n, total)
			}
		}
	}
}

func (e *Executor) progress(kind table.StageKind, done, total int) {
	if e.cfg.Progress != nil {
		e.cfg.Progress(kind, min(done, total), total)
	}
}

// findJob returns the id of the job named name on the job service.
func findJob(ctx context.Context, client jobpb.JobServiceClient, name string) (string, error) {
	resp, err := client.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		return "", err
	}
	for _, j := range resp.GetJobInfo() {
		if j.GetJobName() == name {
			return j.GetJobId(), nil
		}
	}
	return "", errors.New("beamexec: job not found")
}

// chunksMetric reads the chunks counter of a running job (attempted).
func chunksMetric(ctx context.Context, client jobpb.JobServiceClient, jobID string) (int, bool) {
	resp, err := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID})
	if err != nil {
		return 0, false
	}
	n, found := 0, false
	for _, mi := range resp.GetMetrics().GetAttempted() {
		l := mi.GetLabels()
		if mi.GetUrn() != "beam:metric:user:sum_int64:v1" || l["NAMESPACE"] != metricNamespace || l["NAME"] != metricChunks {
			continue
		}
		v, k := binary.Uvarint(mi.GetPayload())
		if k > 0 {
			n += int(int64(v))
			found = true
		}
	}
	return n, found
}

// prismOnce starts one prism job service per process.
var prismOnce struct {
	sync.Once
	endpoint string
	err      error
}

// prismEndpoint returns the address of this process's prism job service,
// started on first use.
func prismEndpoint(ctx context.Context) (string, error) {
	prismOnce.Do(func() {
		l, err := net.Listen("tcp", "localhost:0")
		if err != nil {
			prismOnce.err = err
			return
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, err := prism.CreateJobServer(context.WithoutCancel(ctx), prism.Options{Port: port}); err != nil {
			prismOnce.err = fmt.Errorf("beamexec: starting prism: %w", err)
			return
		}
		prismOnce.endpoint = fmt.Sprintf("localhost:%d", port)
	})
	return prismOnce.endpoint, prismOnce.err
}
