package hvp

import "github.com/rnnaudit/rnnaudit/graph"

// StatePool lends an Objective the States it evaluates its batches on, so
// that a caller that also runs the same programs (forward passes of the
// same batches in another phase) shares their buffers with the Objective
// instead of each allocating its own.
type StatePool interface {
	// State returns a State of program p for the Objective's worker w (0
	// <= w < the Objective's number of workers). The Objective takes it
	// once per worker and program, sets its serial flag, and uses it
	// until the Objective is dropped: the caller must not use that State
	// at the same time.
	State(w int, p *graph.Program) *graph.State
}

// newState returns worker w's State for p: from the Objective's pool
// when it has one, else a new one.
func (w *worker) newState(p *graph.Program) *graph.State {
	if w.pool != nil {
		return w.pool.State(w.index, p)
	}
	return p.NewState()
}
