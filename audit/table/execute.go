package table

import (
	"context"
	"encoding"
	"fmt"
	"slices"
	"sync"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Execute runs a stage of kind through e, the driver's half of it: it
// encodes the shared value and the chunks, and gives each output to
// decode with its chunk's index (decode may be called concurrently). It
// fails when the executor gives an output of a chunk that does not exist,
// two outputs of one chunk or none of a chunk, so that a lost or repeated
// chunk is an error, not a different result.
func Execute(ctx context.Context, e Executor, kind StageKind, shared encoding.BinaryMarshaler, chunks []encoding.BinaryMarshaler, decode func(c int, out []byte) error) error {
	sh, err := shared.MarshalBinary()
	if err != nil {
		return err
	}
	s := &Stage{Kind: kind, Shared: sh, Chunks: make([][]byte, len(chunks))}
	for c, ch := range chunks {
		if s.Chunks[c], err = ch.MarshalBinary(); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	seen := make([]bool, len(chunks))
	err = e.Execute(ctx, s, func(c int, out []byte) error {
		if c < 0 || c >= len(chunks) {
			return fmt.Errorf("audit: the executor gave an output of chunk %d of %d", c, len(chunks))
		}
		mu.Lock()
		dup := seen[c]
		seen[c] = true
		mu.Unlock()
		if dup {
			return fmt.Errorf("audit: the executor gave chunk %d of the %s stage twice", c, kind)
		}
		if err := decode(c, out); err != nil {
			return errs.Wrapf(err, "audit: %s stage, chunk %d: ", kind, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if i := slices.Index(seen, false); i >= 0 {
		return fmt.Errorf("audit: the executor gave no output of chunk %d of the %s stage", i, kind)
	}
	return nil
}
