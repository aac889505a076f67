package beamexec

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// ReadSpec is audit.WorkerSpec.Read: how the driver read its files.
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
func NewSpec(model, train, test, cal string, rs ReadSpec, opt *audit.Options) (audit.WorkerSpec, error) {
	r, err := json.Marshal(rs)
	if err != nil {
		return audit.WorkerSpec{}, fmt.Errorf("beamexec: the read options: %w", err)
	}
	o, err := json.Marshal(opt)
	if err != nil {
		return audit.WorkerSpec{}, fmt.Errorf("beamexec: the audit options: %w", err)
	}
	return audit.WorkerSpec{Model: model, Train: train, Test: test, Calibration: cal, Read: r, Options: o}, nil
}

// LoadWorker reads the model and data files a spec names (local paths,
// or gs://, s3:// or memfs:// URIs, copied to a local temporary
// directory first) and prepares the audit's problem on this worker.
func LoadWorker(ctx context.Context, s *audit.WorkerSpec) (*audit.Worker, error) {
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
// flags (in Beam's standard flag set, not the command's).
func IsWorker(args []string) bool {
	for _, a := range args {
		if a == "--worker=true" || a == "-worker=true" || a == "--worker" || a == "-worker" {
			return true
		}
	}
	return false
}

// RunWorker runs the Beam worker harness with args (IsWorker); it does
// not return. Quotes around a flag's value are removed first: prism
// passes --id='...' with the quotes to a PROCESS worker, which then
// waits for a control connection that never comes.
func RunWorker(args []string) {
	clean := make([]string, len(args))
	for i, a := range args {
		if name, v, ok := strings.Cut(a, "="); ok && len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
			a = name + "=" + v[1:len(v)-1]
		}
		clean[i] = a
	}
	if err := flag.CommandLine.Parse(clean); err != nil {
		fmt.Fprintln(os.Stderr, "audit-beam worker:", err)
		os.Exit(2)
	}
	beam.Init() // runs the harness and exits
	fmt.Fprintln(os.Stderr, "audit-beam worker: the Beam harness returned")
	os.Exit(1)
}
