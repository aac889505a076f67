package graph

// Rewrites of a compiled program that remove data movement. An unrolled
// recurrent node ends in a Concat of its hidden states and, for
// batch-first models, a Transpose before the output layer; both copy the
// largest tensors of the program in every pass (forward, tangent and both
// reverse passes), so removing them matters more than their arithmetic
// suggests.

// optimize applies the rewrites; it runs after prune.
func (p *Program) optimize() {
	p.placeConcats()
	p.commuteRowMaps()
	p.owners = p.owners[:0]
	for i, sl := range p.slots {
		if sl.kind == slotStep && p.live[i] {
			p.owners = append(p.owners, i)
		}
	}
	p.args = p.argSlots()
}

// placeConcats removes every Concat along the outermost axis whose inputs
// are whole results of distinct earlier steps: those steps write straight
// into their place in the Concat's result (a slotPart inside it), and the
// Concat step goes. The result then has no writer of its own; it owns the
// storage its parts live in.
func (p *Program) placeConcats() {
	steps := p.steps[:0]
	for _, st := range p.steps {
		k, ok := st.k.(*concatK)
		if !ok || k.outer != 1 || !p.placeable(st) {
			steps = append(steps, st)
			continue
		}
		off := 0
		for i, j := range st.in {
			root := p.wholeRoot(j)
			p.slots[root].kind = slotPart
			p.slots[root].index = st.out
			p.slots[root].off = off
			off += k.chunk[i]
		}
	}
	p.steps = steps
}

// placeable reports whether every input of the Concat step st is the whole
// result of a step that can be placed inside st's result.
func (p *Program) placeable(st step) bool {
	seen := map[int]bool{}
	for _, j := range st.in {
		root := p.wholeRoot(j)
		if root < 0 || seen[root] || root == st.out {
			return false
		}
		seen[root] = true
	}
	// A step result that is itself a container of parts is not nested.
	for _, sl := range p.slots {
		if sl.kind == slotPart && seen[sl.index] {
			return false
		}
	}
	return true
}

// wholeRoot returns the step slot whose whole result slot j is (j itself,
// or the slot j is a full view of), or -1.
func (p *Program) wholeRoot(j int) int {
	sl := p.slots[j]
	if sl.kind == slotView {
		root := p.slots[sl.index]
		if sl.off != 0 || numel(sl.shape) != numel(root.shape) {
			return -1
		}
		j, sl = sl.index, root
	}
	if sl.kind != slotStep {
		return -1
	}
	return j
}

// commuteRowMaps rewrites a matrix product whose left operand is a
// permutation of the rows of another tensor (a Transpose that keeps the
// last axis, as from time-first recurrent states to a batch-first output
// layer): the product runs on the unpermuted rows and the permutation moves
// its result, which has n columns instead of k (one instead of the hidden
// size for a scalar output layer).
func (p *Program) commuteRowMaps() {
	uses := make([]int, len(p.slots))
	for _, st := range p.steps {
		for _, j := range st.in {
			uses[j]++
		}
	}
	for _, o := range p.outputs {
		if !o.isStatic() {
			uses[o.slot]++
		}
	}
	for _, sl := range p.slots {
		if sl.kind == slotView {
			uses[sl.index]++
		}
	}
	producer := map[int]int{}
	for i, st := range p.steps {
		producer[st.out] = i
	}
	drop := make([]bool, len(p.steps))
	after := map[int]step{} // the row map to run after step i
	for i, st := range p.steps {
		mm, ok := st.k.(*matmulK)
		if !ok || len(mm.ia) != 1 || (mm.add && !mm.addRow) {
			continue
		}
		a := st.in[0]
		gi, ok := producer[a]
		if !ok || uses[a] != 1 || p.slots[a].kind != slotStep {
			continue
		}
		g, ok := p.steps[gi].k.(*mapK)
		src := p.steps[gi].in[0]
		if !ok || numel(p.slots[src].shape) != mm.m*mm.k || !rowPermutation(g.idx, mm.m, mm.k) {
			continue
		}
		// The product on the source rows, then its rows moved.
		tmp := len(p.slots)
		p.slots = append(p.slots, slot{kind: slotStep, shape: []int{mm.m, mm.n}})
		p.live = append(p.live, true)
		p.live[a] = false
		moved := &mapK{idx: make([]int32, mm.m*mm.n)}
		for r := 0; r < mm.m; r++ {
			from := int(g.idx[r*mm.k]) / mm.k
			for c := 0; c < mm.n; c++ {
				moved.idx[r*mm.n+c] = int32(from*mm.n + c)
			}
		}
		drop[gi] = true
		after[i] = step{k: moved, in: []int{tmp}, out: st.out, node: st.node}
		p.steps[i] = step{k: mm, in: append([]int{src}, st.in[1:]...), out: tmp, node: st.node}
	}
	var steps []step
	for i, st := range p.steps {
		if drop[i] {
			continue
		}
		steps = append(steps, st)
		if m, ok := after[i]; ok {
			steps = append(steps, m)
		}
	}
	p.steps = steps
}

// rowPermutation reports whether idx (m*k entries) moves whole rows of k
// elements, each source row exactly once.
func rowPermutation(idx []int32, m, k int) bool {
	if len(idx) != m*k || k == 0 {
		return false
	}
	seen := make([]bool, m)
	for r := 0; r < m; r++ {
		base := int(idx[r*k])
		if base%k != 0 || base/k >= m || seen[base/k] {
			return false
		}
		seen[base/k] = true
		for c := 1; c < k; c++ {
			if int(idx[r*k+c]) != base+c {
				return false
			}
		}
	}
	return true
}
