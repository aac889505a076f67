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
// each. After the evaluated batches the pool keeps only the States of the
// training batches' programs (keep), and the influence phase releases
// them once it has run those (release), so that they do not share the
// heap with the buffers of the phases after it. A State is used by one
// goroutine at a time: the pool's users run in sequence.
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

// keep drops the States of the programs other than those of groups.
func (s *statePool) keep(groups []*group) {
	want := map[*graph.Program]bool{}
	for _, gr := range groups {
		want[gr.prog] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.ws {
		for p := range m {
			if !want[p] {
				delete(m, p)
			}
		}
	}
}

// release drops every State of the pool; later calls of State make new
// ones.
func (s *statePool) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws = nil
}
