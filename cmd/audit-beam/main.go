// Command audit-beam is the audit command with the Beam executor: every
// command and flag of audit (internal/cli), plus the flags of beamexec,
// which runs the lowrank solver's block pass, test points and limits as
// Apache Beam pipelines (prism in this process, a portable runner's job
// service, or Dataflow). The binary is also the Beam workers' binary;
// for that it is built static, from this directory:
//
//	CGO_ENABLED=0 go build -o audit-beam .
//
// It is a module of its own so that the audit module does not depend on
// Beam.
package main

import (
	"os"

	"github.com/rnnaudit/rnnaudit/cmd/audit-beam/beamexec"
	"github.com/rnnaudit/rnnaudit/internal/cli"
)

func main() {
	if beamexec.IsWorker(os.Args[1:]) {
		beamexec.RunWorker(os.Args[1:]) // does not return
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr, &cli.Options{Engine: &engine{}}))
}
