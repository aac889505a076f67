package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/rnnaudit/rnnaudit/audit"
)

// engineHook lets a variant of this command run the LowRank solver's
// stages on a distributed engine (audit.Options.Executor) without this
// module depending on the engine: cmd/audit-beam, a module of its own,
// builds this package with one more file (go build -overlay) whose init
// sets it, as a database/sql driver registers itself. Unset here.
var engineHook struct {
	// flags adds the variant's flags to the audit's.
	flags func(fs *pflag.FlagSet)
	// executor returns the executor of the audit that p describes, its
	// files read, or nil to run in process; and a function that releases
	// what it holds, called when the audit ends.
	executor func(ctx context.Context, p *plan) (audit.Executor, func(), error)
}
