package table

import "fmt"

// The checks and helpers of block and point chunks that the audit's
// workers and driver share.

// Check checks a block chunk's lengths and indices against a
// training set of n sequences.
func (c *BlockChunk) Check(n int) error {
	m := len(c.Seqs)
	if len(c.Blocks) != m || len(c.Labels) != m || len(c.Terms) != m || m == 0 {
		return fmt.Errorf("audit: a block chunk of %d sequences, %d blocks, %d labels and %d term lists", m, len(c.Blocks), len(c.Labels), len(c.Terms))
	}
	for _, i := range c.Seqs {
		if i < 0 || i >= n {
			return fmt.Errorf("audit: a block chunk names training sequence %d of %d", i, n)
		}
	}
	return nil
}

// NewBlockChunkOut allocates the output of a block chunk of n sequences
// (with leverage when withRows).
func NewBlockChunkOut(n int, withRows bool) *BlockChunkOut {
	out := &BlockChunkOut{Recs: make([]BlockRecord, n), GNorm: make([]float64, n), Norms: make([]float64, n), Shift: make([]float64, n)}
	if withRows {
		out.Lev, out.LevMax, out.Unbounded = make([][]float64, n), make([]float64, n), make([]bool, n)
	}
	return out
}

// MapPointChunk is the test pass's map step on a chunk whose Jacobian
// rows are computed: MapPoints, then each record's Skip and target.
func MapPointChunk(basis *ShiftBasis, c *PointChunk, rows [][][]float64) ([]PointRecord, error) {
	jac := make([][]float64, len(c.Points))
	fx := make([]float64, len(c.Points))
	slot := make([]int, len(c.Points))
	for a, pt := range c.Points {
		jac[a], fx[a], slot[a] = rows[pt.Seq][pt.Forecast], pt.F, pt.Slot
	}
	recs, err := MapPoints(basis, jac, fx, slot)
	if err != nil {
		return nil, err
	}
	for a, pt := range c.Points {
		recs[a].Skip = pt.Skip
		if pt.Labelled {
			recs[a].Y, recs[a].Labelled = pt.Y, true
		}
	}
	return recs, nil
}

// Check checks that o is the output of a chunk of n sequences
// with P parameters (withRows: with leverage). Its gradient is any number
// of vectors of P floats (TakeBlockGradient, PutBlockGradient).
func (o *BlockChunkOut) Check(n, P int, withRows bool) error {
	ok := len(o.Recs) == n && len(o.GNorm) == n && len(o.Norms) == n && len(o.Shift) == n && len(o.Total)%P == 0
	if withRows {
		ok = ok && len(o.Lev) == n && len(o.LevMax) == n && len(o.Unbounded) == n
	}
	if !ok {
		return fmt.Errorf("audit: a block chunk's output of %d records and a gradient of %d floats, want %d and a multiple of %d", len(o.Recs), len(o.Total), n, P)
	}
	return nil
}
