// Command build builds the audit-beam binary: the audit command
// (cmd/audit of the rnnaudit module) with engine.go.in added to its
// package by go build -overlay, linked with this module's Beam executor,
// CGO_ENABLED=0 so that it can be a Beam worker binary anywhere.
//
// From cmd/audit-beam:
//
//	go run ./build [-o audit-beam]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/rnnaudit/rnnaudit/cmd/audit-beam/beamexec"
)

func main() {
	out := flag.String("o", "audit-beam", "the binary to write")
	flag.Parse()
	if err := beamexec.Build(*out, true); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}
