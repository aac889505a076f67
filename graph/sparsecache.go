package graph

// This file: the sparsity of tangents, found once per tangent pass.
//
// A dense Hessian takes one tangent and one second-order pass per unit
// direction of the parameters, and each matrix product of an unrolled
// recurrence asks for the nonzero entries of the same weight tangent
// (the transposed recurrent weight, one nonzero entry or none) at every
// time step, in both passes: twenty scans of the same 400 values per
// batch and column for the paper's RNN, about a sixth of the Hessian's
// time over batches of 20 sequences. The State keeps each scan's result
// until its next Tangent, which is the only pass that writes tangents.

// sparsityCache holds the sparse entries found in tangent buffers since
// the last Tangent, by the address of their first element and their
// length.
type sparsityCache struct {
	m    map[sparsityKey]*sparse
	pool []*sparse // scan results, reused from pass to pass
	used int       // pool[:used] are in m
	tmp  sparse    // the last uncached scan
}

type sparsityKey struct {
	p *float64
	n int
}

// sparsityMin is the shortest tangent whose scan is cached: shorter
// ones cost less to scan than to look up.
const sparsityMin = 64

// reset forgets every scan: the tangents are about to change.
func (c *sparsityCache) reset() {
	clear(c.m)
	c.used = 0
}

// sparseOf reports whether the tangent x is sparse (sparse.find) and
// its nonzero entries, scanning x at most once per tangent pass of the
// State. x must be a tangent buffer of the State (or of its parameter
// direction), unchanged since the last Tangent. The entries are valid
// until the next call.
func (ex *exec) sparseOf(x []float64) (*sparse, bool) {
	if len(x) > sparseScanMax {
		return nil, false
	}
	if ex == nil {
		s := new(sparse)
		return s, s.find(x)
	}
	c := &ex.sparsity
	if len(x) < sparsityMin {
		return &c.tmp, c.tmp.find(x)
	}
	k := sparsityKey{&x[0], len(x)}
	if s, ok := c.m[k]; ok {
		return s, s.at != nil
	}
	if c.used == len(c.pool) {
		c.pool = append(c.pool, new(sparse))
	}
	s := c.pool[c.used]
	c.used++
	if !s.find(x) {
		s.at = nil // dense; a sparse x has a non-nil, maybe empty, s.at
	}
	if c.m == nil {
		c.m = map[sparsityKey]*sparse{}
	}
	c.m[k] = s
	return s, s.at != nil
}

// inline reports whether parallelFor would run n elements' work on the
// calling goroutine, so that a kernel can call its loop directly instead
// of building a closure for it (an allocation per call).
func (ex *exec) inline(n int) bool {
	return ex == nil || ex.serial || n < 2*parallelGrain
}
