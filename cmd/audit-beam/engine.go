package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/cmd/audit-beam/beamexec"
	"github.com/rnnaudit/rnnaudit/internal/cli"
)

// engine is the Beam executor as the audit command's cli.Engine: its
// flags, and a beamexec.Executor for an audit given --runner.
type engine struct {
	runner, endpoint, envType, envConfig string
	workerBinary, staging, logLevel      string
	opts                                 []string
}

// Flags adds the executor's flags to the audit's.
func (e *engine) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&e.runner, "runner", "", "run the lowrank solver's block pass, test points and limits on Apache Beam: prism (in this process), universal, flink or spark (a job service at --endpoint), or dataflow (default: in process, without Beam)")
	fs.StringVar(&e.endpoint, "endpoint", "", "the Beam job service, host:port (universal, flink, spark)")
	fs.StringVar(&e.envType, "environment-type", "", "where Beam workers run: loopback (in this process; prism's default), process, docker (the default of the others) or external")
	fs.StringVar(&e.envConfig, "environment-config", "", `the environment's configuration, e.g. {"command": "/opt/audit-beam"} for process`)
	fs.StringVar(&e.workerBinary, "worker-binary", "", "the binary Beam workers run (default: this one, built with CGO_ENABLED=0 for linux/amd64)")
	fs.StringVar(&e.staging, "staging", "", "a directory, gs:// or s3:// URI every worker and this process can read and write: the stages' inputs and outputs (default: a local temporary directory)")
	fs.StringVar(&e.logLevel, "beam-log", "warn", "the least severe of Beam's and prism's log lines to print: debug, info (job progress, a dozen lines a stage), warn or error")
	fs.StringArrayVar(&e.opts, "beam-opt", nil, "a Beam pipeline option NAME=VALUE passed through to Beam (repeatable), e.g. --beam-opt project=my-project")
}

// Executor returns the Beam executor of the audit a, or nil (in process)
// without --runner. Beam's pipeline options are Go flags of the standard
// flag set, which --beam-opt sets.
func (e *engine) Executor(ctx context.Context, a *cli.Audit) (table.Executor, func(), error) {
	if e.runner == "" {
		return nil, func() {}, nil
	}
	if s := a.Options.Solver; s != "" && s != audit.Auto && s != audit.LowRank {
		return nil, nil, usagef("--runner runs the lowrank solver's stages on Beam, not the %s solver's: give --solver lowrank", s)
	}
	for _, o := range e.opts {
		name, v, ok := strings.Cut(strings.TrimLeft(o, "-"), "=")
		if !ok || flag.Lookup(name) == nil {
			return nil, nil, usagef("--beam-opt %q: want NAME=VALUE with NAME a Beam pipeline option", o)
		}
		if err := flag.Set(name, v); err != nil {
			return nil, nil, usagef("--beam-opt %s: %v", o, err)
		}
	}
	if _, err := beamexec.LogLevel(e.logLevel); err != nil {
		return nil, nil, usagef("--beam-log %q: want debug, info, warn or error", e.logLevel)
	}
	spec, err := beamexec.NewSpec(a.Model, a.Data, a.Test, a.Calibration, beamexec.ReadSpec{Output: a.Output, Read: a.Read}, a.Options)
	if err != nil {
		return nil, nil, err
	}
	progress := a.Options.Progress
	x, err := beamexec.New(ctx, beamexec.Config{Runner: e.runner, Endpoint: e.endpoint, EnvironmentType: e.envType, EnvironmentConfig: e.envConfig,
		WorkerBinary: e.workerBinary, Staging: e.staging, LogLevel: e.logLevel, Spec: spec,
		Progress: func(k table.StageKind, done, total int) {
			if progress != nil {
				progress(audit.Progress{Phase: fmt.Sprintf("beam %s stage", k), Done: done, Total: total})
			}
		}})
	if err != nil {
		return nil, nil, err
	}
	return x, func() { x.Close() }, nil
}

// usagef is an error of how the command was called (exit status 2).
func usagef(format string, args ...any) error {
	return &cli.UsageError{Msg: fmt.Sprintf(format, args...)}
}
