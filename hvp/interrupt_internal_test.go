package hvp

import (
	"context"
	"errors"
	"testing"
)

// TestInterruptible: a factorisation that has not finished does not hold
// up a cancelled context, and one that finishes gives its result.
func TestInterruptible(t *testing.T) {
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := interruptible(ctx, func() bool { <-release; return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
	close(release)
	if ok, err := interruptible(context.Background(), func() bool { return true }); !ok || err != nil {
		t.Errorf("finished: %v, %v; want true, nil", ok, err)
	}
}
