package hvp_test

import (
	"context"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// countingPool lends States it made beforehand and counts the loans.
type countingPool struct {
	states map[*graph.Program]*graph.State
	loans  int
}

func (c *countingPool) State(w int, p *graph.Program) *graph.State {
	c.loans++
	return c.states[p]
}

// TestStatePool: an Objective with a pool evaluates its batches on the
// States the pool lends, whatever ran on them before, taking one per
// worker and program once, and computes the same gradient, bit for bit,
// as on States of its own.
func TestStatePool(t *testing.T) {
	ctx := context.Background()
	o, theta := fixtureObjective(t, fixtureByName(t, "gru_1l_bf"), hvp.SquaredError, 5)
	want := make([]float64, len(theta))
	if _, err := o.Gradient(ctx, theta, want); err != nil {
		t.Fatal(err)
	}
	b := o.Batches[0]
	st := b.Program.NewState()
	// The lent State last ran elsewhere: other parameters, a backward
	// pass.
	other := append([]float64(nil), theta...)
	for i := range other {
		other[i] *= 1.5
	}
	if _, err := st.Forward(other, b.Inputs); err != nil {
		t.Fatal(err)
	}
	pool := &countingPool{states: map[*graph.Program]*graph.State{b.Program: st}}
	withPool := &hvp.Objective{Loss: o.Loss, Batches: o.Batches, States: pool}
	if _, err := withPool.Gradient(ctx, other, make([]float64, len(theta))); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, len(theta))
	if _, err := withPool.Gradient(ctx, theta, got); err != nil {
		t.Fatal(err)
	}
	if pool.loans != 1 {
		t.Errorf("%d loans for one worker and one program, want 1", pool.loans)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("gradient[%d] on the lent State %v, on the objective's own %v", i, got[i], want[i])
		}
	}
}
