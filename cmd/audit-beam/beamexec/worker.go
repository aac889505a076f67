package beamexec

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// ReadSpec is table.WorkerSpec.Read: how the driver read its files.
type ReadSpec struct {
	// Output is the forecast output (onnx.LoadOutput; "" the first).
	Output string
	// Read reads the training file; the test and calibration files are
	// read with the training file's feature and target columns, the test
	// file's targets optional (as the audit command reads them).
	Read blocks.Options
}

// NewSpec returns the worker spec of an audit of the model and files
// (test and cal may be empty) read with rs, with options opt (their
// calibration set, progress and executor are not part of it).
func NewSpec(model, train, test, cal string, rs ReadSpec, opt *audit.Options) (table.WorkerSpec, error) {
	r, err := json.Marshal(rs)
	if err != nil {
		return table.WorkerSpec{}, fmt.Errorf("beamexec: the read options: %w", err)
	}
	o, err := json.Marshal(opt)
	if err != nil {
		return table.WorkerSpec{}, fmt.Errorf("beamexec: the audit options: %w", err)
	}
	return table.WorkerSpec{Model: model, Train: train, Test: test, Calibration: cal, Read: r, Options: o}, nil
}

// LoadWorker reads the model and data files a spec names (local paths,
// or gs://, s3:// or memfs:// URIs, copied to a local temporary
// directory first) and prepares the audit's problem on this worker.
func LoadWorker(ctx context.Context, s *table.WorkerSpec) (*audit.Worker, error) {
	var rs ReadSpec
	if err := json.Unmarshal(s.Read, &rs); err != nil {
		return nil, fmt.Errorf("beamexec: the worker spec's read options: %w", err)
	}
	var opt audit.Options
	if err := json.Unmarshal(s.Options, &opt); err != nil {
		return nil, fmt.Errorf("beamexec: the worker spec's audit options: %w", err)
	}
	dir, err := os.MkdirTemp("", "rnnaudit-worker-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	local := func(uri, name string) (string, error) {
		if uri == "" || !strings.Contains(uri, "://") {
			return uri, nil
		}
		b, err := readURI(ctx, uri)
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, b, 0o600)
	}
	var paths [4]string
	for i, u := range []string{s.Model, s.Train, s.Test, s.Calibration} {
		if paths[i], err = local(u, fmt.Sprint(i)); err != nil {
			return nil, err
		}
	}
	g, _, err := onnx.LoadOutput(paths[0], rs.Output)
	if err != nil {
		return nil, err
	}
	train, err := blocks.ReadFile(paths[1], &rs.Read)
	if err != nil {
		return nil, err
	}
	var test *blocks.Dataset
	if paths[2] != "" {
		ro := rs.Read
		ro.Features, ro.Targets, ro.OptionalTargets = train.Features, train.Targets, true
		if test, err = blocks.ReadFile(paths[2], &ro); err != nil {
			return nil, err
		}
	}
	if paths[3] != "" {
		ro := rs.Read
		ro.Features, ro.Targets = train.Features, train.Targets
		if opt.Calibration, err = blocks.ReadFile(paths[3], &ro); err != nil {
			return nil, err
		}
	}
	return audit.NewWorker(g, train, test, &opt)
}

// IsWorker reports whether a process's arguments start a Beam worker:
// a runner starts the worker binary with --worker=true and the harness's
// flags (in Beam's standard flag set, not the command's), or, as a
// process environment's command, with --id and --provision_endpoint
// only (the Go SDK container's boot program's contract).
func IsWorker(args []string) bool {
	for _, a := range args {
		if a == "--worker=true" || a == "-worker=true" || a == "--worker" || a == "-worker" || strings.HasPrefix(a, "--provision_endpoint=") {
			return true
		}
	}
	return false
}

// RunWorker runs the Beam worker harness with args (IsWorker); it does
// not return. Quotes around a flag's value are removed first: prism
// passes --id='...' with the quotes to a process worker. Started as a
// process environment's command (--provision_endpoint), it does what
// the Go SDK's boot program does, without fetching a worker binary (it
// is the worker binary): it asks the provision service for the control
// and logging endpoints and the pipeline options, then runs the harness.
func RunWorker(args []string) {
	clean := make([]string, len(args))
	var id, provision string
	for i, a := range args {
		if name, v, ok := strings.Cut(a, "="); ok {
			if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
				v = v[1 : len(v)-1]
			}
			a = name + "=" + v
			switch strings.TrimLeft(name, "-") {
			case "id":
				id = v
			case "provision_endpoint":
				provision = v
			}
		}
		clean[i] = a
	}
	if provision != "" {
		var err error
		if clean, err = boot(id, provision); err != nil {
			fmt.Fprintln(os.Stderr, "audit-beam worker:", err)
			os.Exit(1)
		}
	}
	if err := flag.CommandLine.Parse(clean); err != nil {
		fmt.Fprintln(os.Stderr, "audit-beam worker:", err)
		os.Exit(2)
	}
	beam.Init() // runs the harness and exits
	fmt.Fprintln(os.Stderr, "audit-beam worker: the Beam harness returned")
	os.Exit(1)
}

// boot asks the provision service at endpoint for what worker id needs
// and returns the harness's arguments.
func boot(id, endpoint string) ([]string, error) {
	ctx := grpcx.WriteWorkerID(context.Background(), id)
	info, err := tools.ProvisionInfo(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("provisioning from %s: %w", endpoint, err)
	}
	options, err := tools.ProtoToJSON(info.GetPipelineOptions())
	if err != nil {
		return nil, fmt.Errorf("the pipeline options: %w", err)
	}
	// The options file is written to the working directory: a
	// temporary one, so that no worker writes into the user's (the
	// spec's local paths are absolute).
	dir, err := os.MkdirTemp("", "audit-beam-worker-")
	if err != nil {
		return nil, err
	}
	if err := os.Chdir(dir); err != nil {
		return nil, err
	}
	if err := tools.MakePipelineOptionsFileAndEnvVar(options); err != nil {
		return nil, fmt.Errorf("the pipeline options: %w", err)
	}
	if info.GetStatusEndpoint() != nil {
		os.Setenv("STATUS_ENDPOINT", info.GetStatusEndpoint().GetUrl())
	}
	if len(info.GetRunnerCapabilities()) > 0 {
		os.Setenv("RUNNER_CAPABILITIES", strings.Join(info.GetRunnerCapabilities(), " "))
	}
	return []string{"--worker=true", "--id=" + id,
		"--logging_endpoint=" + info.GetLoggingEndpoint().GetUrl(),
		"--control_endpoint=" + info.GetControlEndpoint().GetUrl(),
		"--semi_persist_dir=" + os.TempDir()}, nil
}
