package datacheck

import (
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// The options Degenerate's errors name: audit.Options.Blocks and
// BlockLength (this package does not import audit; the values are
// audit's own).
const (
	optBlocks      errs.Option = "audit.Options.Blocks"
	optBlockLength errs.Option = "audit.Options.BlockLength"
)

// Degenerate refuses a block scheme in which deleting any one block
// deletes the whole training set, so that every leave-one-out
// fit would be a fit to nothing:
//
//   - nested blocks over one sequence: block (i, j) deletes the union of
//     sequence i and interval j, and with one sequence (with targets)
//     that is all of it;
//   - a scheme with one block left, which is what an interval or nested
//     scheme over one sequence becomes when fewer than two intervals
//     hold a target (blocks.NewScheme falls back to sequence blocks).
//
// The errors name the options that fix them (audit.Options.Blocks and
// BlockLength, by the names package audit gives them) and
// what to choose. A scheme with two or more blocks that each delete part
// of the data passes.
func Degenerate(s *blocks.Scheme, train *blocks.Dataset) error {
	if s.Kind == blocks.Nested {
		seqs := map[int]bool{}
		for _, b := range s.Blocks {
			seqs[b.Seq] = true
		}
		if len(seqs) == 1 {
			return errs.Fix([]errs.Option{optBlocks},
				"audit: nested blocks on a single training sequence (%s has one sequence with targets): every block would delete the whole training set; use interval blocks, which split that sequence into intervals",
				train.File)
		}
	}
	if s.Degenerate && len(s.Blocks) < 2 {
		return errs.Fix([]errs.Option{optBlockLength},
			"audit: %s blocks of length %d leave fewer than two intervals with a target in %s (longest sequence: %d steps), and with %d training sequence(s) with targets the sequence blocks used instead are too few: a block would delete the whole training set; choose a block length of at most half the sequence",
			s.Requested, s.K, train.File, train.MaxLen(), len(s.Blocks))
	}
	return nil
}
