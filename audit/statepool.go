package audit

import (
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
)

// statePool keeps one State per worker and program across the phases of
// an audit that run the same programs one after another: the trained
// model's outputs on the evaluated batches (problem.outputs) and the
// training objective's gradient (an hvp.StatePool) run the batches of
// wholeBatch sequences of one compiled program, on States of a few MB
// each. release lets them go before a phase that does not need them, so
// that they do not share the heap with its buffers. A State is used by
// one goroutine at a time: the pool's users run in sequence.
type statePool struct {
	mu sync.Mutex
	ws []map[*graph.Program]*graph.State // by worker
}

// State returns worker w's State of p, made on first use.
func (s *statePool) State(w int, p *graph.Program) *graph.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.ws) <= w {
		s.ws = append(s.ws, nil)
	}
	if s.ws[w] == nil {
		s.ws[w] = map[*graph.Program]*graph.State{}
	}
	st, ok := s.ws[w][p]
	if !ok {
		st = p.NewState()
		s.ws[w][p] = st
	}
	return st
}

// release drops every State of the pool; later calls of State make new
// ones.
func (s *statePool) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws = nil
}
