package table

import (
	"context"
	"encoding"
	"strings"
	"testing"
)

// emitting is an Executor that emits the outputs of the chunks named by
// order, each its input.
type emitting struct{ order []int }

func (e emitting) Execute(_ context.Context, s *Stage, emit func(int, []byte) error) error {
	for _, c := range e.order {
		var in []byte
		if c >= 0 && c < len(s.Chunks) {
			in = s.Chunks[c]
		}
		if err := emit(c, in); err != nil {
			return err
		}
	}
	return nil
}

// TestExecute: every chunk's output reaches decode with its index in
// whatever order the executor gives them, and a lost, repeated or
// unknown chunk is an error.
func TestExecute(t *testing.T) {
	shared := &ChunkLimits{Labelled: 1}
	chunks := []encoding.BinaryMarshaler{&ChunkLimits{Labelled: 10}, &ChunkLimits{Labelled: 11}, &ChunkLimits{Labelled: 12}}
	run := func(order ...int) (map[int]int, error) {
		got := map[int]int{}
		err := Execute(context.Background(), emitting{order}, StageFinalize, shared, chunks, func(c int, out []byte) error {
			var l ChunkLimits
			if err := l.UnmarshalBinary(out); err != nil {
				return err
			}
			got[c] = l.Labelled
			return nil
		})
		return got, err
	}
	got, err := run(2, 0, 1)
	if err != nil || len(got) != 3 || got[0] != 10 || got[1] != 11 || got[2] != 12 {
		t.Errorf("in order 2, 0, 1: %v, %v", got, err)
	}
	for _, tc := range []struct {
		order []int
		want  string
	}{
		{[]int{0, 2}, "gave no output of chunk 1 of the finalize stage"},
		{[]int{0, 1, 1, 2}, "gave chunk 1 of the finalize stage twice"},
		{[]int{0, 1, 2, 3}, "an output of chunk 3 of 3"},
	} {
		if _, err := run(tc.order...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("order %v: %v, want an error with %q", tc.order, err, tc.want)
		}
	}
	// An output that does not decode names its stage and chunk.
	err = Execute(context.Background(), emitting{[]int{0}}, StageBlocks, shared, chunks[:1], func(int, []byte) error {
		return (&BlockChunkOut{}).UnmarshalBinary([]byte("x"))
	})
	if err == nil || !strings.Contains(err.Error(), "blocks stage, chunk 0") {
		t.Errorf("a garbled output: %v", err)
	}
}
