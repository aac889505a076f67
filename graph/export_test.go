package graph

import "fmt"

// KernelCounts returns how many steps of p use each kernel type, for
// tests of the program rewrites.
func KernelCounts(p *Program) map[string]int {
	n := map[string]int{}
	for _, st := range p.steps {
		n[fmt.Sprintf("%T", st.k)[len("*graph."):]]++
	}
	return n
}

// NumParts returns how many slots of p are stored inside a Concat's
// result (placeConcats).
func NumParts(p *Program) int {
	n := 0
	for _, sl := range p.slots {
		if sl.kind == slotPart {
			n++
		}
	}
	return n
}

// ZeroAllCotangents makes s's second-order passes zero every cotangent
// tangent before they run and add every contribution, as before
// freshcot.go, for tests comparing the two.
func ZeroAllCotangents(s *State) {
	d := s.diff()
	d.fresh = &freshPlan{set: make([]uint64, len(s.p.steps)), zero: make([]uint64, len(s.p.steps))}
	if d.dcot == nil {
		d.dcot = s.buffers()
	}
}
