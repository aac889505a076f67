package cli

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// An Engine runs the lowrank solver's stages of an audit somewhere else
// than in this process (audit.Options.Executor), such as on Apache Beam
// (cmd/audit-beam). A binary passes it to Main in Options; the audit
// command itself has none, so that this module does not depend on any
// engine.
type Engine interface {
	// Flags adds the engine's flags to the audit's.
	Flags(fs *pflag.FlagSet)
	// Executor returns the executor of the audit a describes, its
	// files read, or nil to run in process; and a function that
	// releases what it holds, called when the audit ends. An error of
	// how the command was called is a *UsageError (exit status 2).
	Executor(ctx context.Context, a *Audit) (table.Executor, func(), error)
}

// Audit is what an Engine is told of the audit it runs: the files of the
// command line, how they are read, and the audit's options.
type Audit struct {
	// Model, Data, Test and Calibration are the paths of --model,
	// --data, --test and --calibration ("" when not given).
	Model, Data, Test, Calibration string
	// Output is the name of the forecast output ("" the first).
	Output string
	// Read is how the CSV files are read.
	Read blocks.Options
	// Options are the audit's options, Progress included; the engine
	// may read them but not change them.
	Options *audit.Options
}

// engineAudit is what p tells an Engine.
func (p *plan) engineAudit() *Audit {
	return &Audit{Model: p.f.model, Data: p.f.data, Test: p.f.test, Calibration: p.f.calibration,
		Output: p.output, Read: p.read, Options: &p.opt}
}
