package cli

import (
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/reports"
)

// checkFanIDs checks the ids --fan-charts names against the evaluated
// sequences (test, or train for a self-audit), before the audit runs: an
// id that is not there is a usage error naming the flag.
func checkFanIDs(sel reports.FanSelection, train, test *blocks.Dataset) error {
	d := test
	if d == nil {
		d = train
	}
	ids := make([]string, len(d.Seqs))
	for i, s := range d.Seqs {
		ids[i] = s.ID
	}
	if err := sel.Check(ids); err != nil {
		return usagef("--fan-charts: %v in %s", err, d.File)
	}
	return nil
}
