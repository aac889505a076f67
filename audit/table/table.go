package table

// The large-scale path: jackknife+ intervals from linearised
// leave-one-block-out shifts computed in a low-dimensional space, as map,
// combine and finalize steps over plain values.
//
// A basis (ShiftBasis) holds two sets of rows of length P: U (k rows,
// orthonormal: the low-rank curvature factor's, hvp.LowRank.U), on which
// shifts are kept exactly, and Sketch (k' rows) standing for the
// complement of U, on which inner products are estimated as
// (R a)·(R b): a Gaussian sketch scaled by 1/sqrt(k') (TRAK-style,
// unbiased) or orthonormal rows (a projection). The linearised change of
// the prediction at test point x when block b is left out is
//
//	Delta_b(x) = J_x delta_b ~= G_x · A_b + H_x · S_b,
//
// with A_b = U delta_b, S_b = R (delta_b - U^T A_b) (block side, MapBlock)
// and G_x = U J_x^T, H_x = R (J_x^T - U^T G_x) (test side, MapPoints); it
// is exact in the top part and, when R is orthonormal and spans the
// complement parts of the test Jacobians, exact altogether.
//
// Distributed form (Apache Beam, Go SDK): every value below is a struct
// of exported slices and numbers, with no pointers into graphs, so it
// encodes with encoding/json or Beam's coders.
//   - MapBlock is the body of a ParDo over chunks of training blocks: the
//     block's step delta_b (P floats, from its gradient and the factor,
//     never kept) in, a BlockRecord of k + k' + forecasts floats out.
//   - MapPoints is a ParDo over chunks of test sequences: output-Jacobian
//     rows in, PointRecords of k + k' + 2 numbers out.
//   - CombineBlocks is the combine: a concatenation (Flatten, then a
//     CombineGlobally that collects the records in block order) into one
//     BlockTable, n × (k + k' + forecasts) floats, sent to every finalize
//     worker as a side input.
//   - FinalizeLimits is a ParDo over chunks of test points with the
//     BlockTable as side input: the shifts of all blocks at those points
//     as one matrix product (q × n floats, discarded after the chunk),
//     the jackknife+ limits by exact selection and the coverage counts of
//     the calibration curve. The in-process LowRank solver (package
//     audit) calls it through TableSpec.Finalize.
//
// Memory of one finalize call is at most 8 q n bytes for q points and n
// blocks (finalizeFull; the indexed path holds a few thousand shifts per
// point); blocks × points are never held at once.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// ShiftBasis is the low-dimensional space of the scalable path (see the
// comment at the top of table.go). All fields are plain values.
type ShiftBasis struct {
	// P is the number of parameters.
	P int
	// U holds k orthonormal rows of length P, row-major (k×P); k may be 0.
	U []float64
	// Sketch holds k' rows of length P (k'×P) standing for the
	// complement of U: inner products there are estimated as
	// (Sketch a)·(Sketch b). k' may be 0 (the complement is dropped).
	Sketch []float64
}

// K returns k, the number of rows of U.
func (s *ShiftBasis) K() int { return len(s.U) / s.P }

// KS returns k', the number of sketch rows.
func (s *ShiftBasis) KS() int { return len(s.Sketch) / s.P }

// gaussianSketch returns k'×P entries drawn from N(0, 1/k') with seed:
// E[R^T R] = I, so (R a)·(R b) is an unbiased estimate of a·b with
// standard deviation about |a||b|/sqrt(k') (Johnson-Lindenstrauss). The
// LowRank solver keeps no sketch today (ShiftBasis.Sketch empty); the
// tests measure what one would add.
func gaussianSketch(P, ks int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x736b65746368))
	out := make([]float64, ks*P)
	sd := 1 / math.Sqrt(float64(ks))
	for i := range out {
		out[i] = sd * r.NormFloat64()
	}
	return out
}

// project returns U v (k) and Sketch (v - U^T U v) (k').
func (s *ShiftBasis) project(v []float64) (top, rest []float64) {
	P, k, ks := s.P, s.K(), s.KS()
	top = make([]float64, k)
	if k > 0 {
		graph.MatMul(false, false, k, 1, P, s.U, v, top)
	}
	rest = make([]float64, ks)
	if ks > 0 {
		perp := append([]float64(nil), v...)
		for i, c := range top {
			num.AddScaled(perp, -c, s.U[i*P:(i+1)*P])
		}
		graph.MatMul(false, false, ks, 1, P, s.Sketch, perp, rest)
	}
	return top, rest
}

// BlockRecord is what the block pass keeps of one training block.
type BlockRecord struct {
	// A is U delta_b (k floats) and S is Sketch (delta_b - U^T A) (k').
	A, S []float64
	// Res are the block's own leave-out residuals, one per forecast
	// position (the index PointRecord.Forecast refers to): +Inf for an
	// unbounded one, NaN where the block has no loss term.
	Res []float64
}

// MapBlock is the map step of the block pass for one block: delta is its
// leave-out step theta_-b - theta (infinitesimal or Newton, P floats; not
// kept) and res its own leave-out residuals per forecast position (kept,
// not copied).
func MapBlock(s *ShiftBasis, delta, res []float64) (BlockRecord, error) {
	if len(delta) != s.P {
		return BlockRecord{}, fmt.Errorf("audit: a block step of length %d, the basis has %d parameters", len(delta), s.P)
	}
	a, r := s.project(delta)
	return BlockRecord{A: a, S: r, Res: res}, nil
}

// PointRecord is what the test pass keeps of one evaluation point.
type PointRecord struct {
	// F is the prediction f(x; theta) and Forecast its forecast slot
	// (the column of BlockTable.Res, i.e. the index into BlockRecord.Res,
	// whose residuals it pairs with; -1: no block has a residual at its
	// forecast).
	F        float64
	Forecast int
	// Skip is the block whose residual the point leaves out (-1: none):
	// in a self-audit, the block of the point's own training sequence.
	Skip int
	// Y is the target, when Labelled: FinalizeLimits counts whether the
	// point's intervals on a grid of levels cover it.
	Y        float64
	Labelled bool
	// G is U J_x^T (k floats) and H is Sketch (J_x^T - U^T G) (k').
	G, H []float64
}

// mapPointsBatch is the number of rows from which MapPoints projects them
// in one blocked product (transposing U first).
const mapPointsBatch = 16

// MapPoints is the map step of the test pass: for each test point i, its
// output-Jacobian row jac[i] (d f / d theta, P floats; not kept, e.g.
// from hvp.Objective.PerExampleGradients with Job.Outputs), prediction f[i]
// and forecast slot forecast[i]. The records leave no block out (Skip
// -1) and are unlabelled; the caller sets Skip, Y and Labelled.
func MapPoints(s *ShiftBasis, jac [][]float64, f []float64, forecast []int) ([]PointRecord, error) {
	if len(f) != len(jac) || len(forecast) != len(jac) {
		return nil, fmt.Errorf("audit: %d Jacobian rows, %d predictions and %d forecast positions", len(jac), len(f), len(forecast))
	}
	out := make([]PointRecord, len(jac))
	for i, row := range jac {
		if len(row) != s.P {
			return nil, fmt.Errorf("audit: test point %d: a Jacobian row of length %d, the basis has %d parameters", i, len(row), s.P)
		}
	}
	if s.KS() == 0 && len(jac) >= mapPointsBatch {
		// One blocked product for all rows (projector) instead of a
		// matrix-vector product per row, which read U from memory for
		// each: 3.9 Gflop per CPU second at P = 17,217.
		g := NewProjector(s.U, s.P).Rows(jac, nil)
		for i := range jac {
			out[i] = PointRecord{F: f[i], Forecast: forecast[i], Skip: -1, G: g[i], H: []float64{}}
		}
		return out, nil
	}
	for i, row := range jac {
		g, h := s.project(row)
		out[i] = PointRecord{F: f[i], Forecast: forecast[i], Skip: -1, G: g, H: h}
	}
	return out, nil
}

// BlockTable is the combined block pass: N blocks, each a row of Coef
// (A then S, K + KS floats) and a row of Res (F forecast slots).
type BlockTable struct {
	N, K, KS, F int
	Coef        []float64
	Res         []float64
}

// CombineBlocks concatenates the records of the block pass, in order,
// into a BlockTable. It returns an error when the records do not agree
// in their dimensions.
func CombineBlocks(recs []BlockRecord) (BlockTable, error) {
	if len(recs) == 0 {
		return BlockTable{}, fmt.Errorf("audit: no block records")
	}
	t := NewBlockTable(len(recs), len(recs[0].A), len(recs[0].S), len(recs[0].Res))
	if err := t.Fill(recs); err != nil {
		return BlockTable{}, err
	}
	return *t, nil
}

// NewBlockTable allocates the table of n blocks of k + ks coefficients
// and f residual slots, zero, for a block pass to Put its records in as
// they come.
func NewBlockTable(n, k, ks, f int) *BlockTable {
	return &BlockTable{N: n, K: k, KS: ks, F: f, Coef: make([]float64, n*(k+ks)), Res: make([]float64, n*f)}
}

// Put copies record r into row b and returns it as views of that row,
// so that the block pass holds each record once, in the table (at a
// million blocks the records and a combined copy were 3.4 GB).
func (t *BlockTable) Put(b int, r BlockRecord) (BlockRecord, error) {
	if len(r.A) != t.K || len(r.S) != t.KS || len(r.Res) != t.F {
		return BlockRecord{}, fmt.Errorf("audit: block record %d has %d+%d coefficients and %d residuals, the table %d+%d and %d", b, len(r.A), len(r.S), len(r.Res), t.K, t.KS, t.F)
	}
	w := t.K + t.KS
	row := t.Coef[b*w : (b+1)*w : (b+1)*w]
	res := t.Res[b*t.F : (b+1)*t.F : (b+1)*t.F]
	v := BlockRecord{A: row[:t.K:t.K], S: row[t.K:], Res: res}
	if !sameStart(v.A, r.A) {
		copy(v.A, r.A)
	}
	if !sameStart(v.S, r.S) {
		copy(v.S, r.S)
	}
	if !sameStart(v.Res, r.Res) {
		copy(v.Res, r.Res)
	}
	return v, nil
}

// Fill puts every record recs[b] into row b (records that are already
// views of their rows are not copied).
func (t *BlockTable) Fill(recs []BlockRecord) error {
	if len(recs) != t.N {
		return fmt.Errorf("audit: %d block records for a table of %d", len(recs), t.N)
	}
	for b, r := range recs {
		if _, err := t.Put(b, r); err != nil {
			return err
		}
	}
	return nil
}

// sameStart reports whether a and b start at the same element.
func sameStart(a, b []float64) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// Shifts returns the linearised shifts Delta_b(x) = G_x·A_b + H_x·S_b of
// every point (rows) under every block (columns), q × N floats, as one
// matrix product.
func (t *BlockTable) Shifts(pts []PointRecord) ([]float64, error) {
	return t.shiftsInto(nil, pts)
}

// shiftPanel is the number of blocks whose shifts shiftsInto forms at a
// time before it transposes them into place: the transposed product of a
// whole million-block table was another q × N floats (256 MB per
// finalize chunk of 32 points).
const shiftPanel = 2048

// shiftsInto is Shifts into d (reused when it holds q × N floats).
func (t *BlockTable) shiftsInto(d []float64, pts []PointRecord) ([]float64, error) {
	w := t.K + t.KS
	q := len(pts)
	xt, err := t.pointsT(pts)
	if err != nil {
		return nil, err
	}
	if cap(d) < q*t.N {
		d = make([]float64, q*t.N)
	}
	d = d[:q*t.N]
	if w == 0 || q == 0 {
		clear(d)
		return d, nil
	}
	// D^T = Coef X^T (N × q) a panel of blocks at a time, each transposed
	// into place: the product copies its transposed right operand, which
	// is X here (q × w), not the table (N × w, the largest value of the
	// path). Panels of a multiple of four blocks leave every block's
	// products as in one product over the table (the kernel takes four
	// rows at a time), so the shifts do not depend on the panel.
	dt := make([]float64, min(shiftPanel, t.N)*q)
	for b0 := 0; b0 < t.N; b0 += shiftPanel {
		nb := min(shiftPanel, t.N-b0)
		graph.MatMul(false, false, nb, q, w, t.Coef[b0*w:(b0+nb)*w], xt, dt[:nb*q])
		for b := 0; b < nb; b++ {
			for i, v := range dt[b*q : (b+1)*q] {
				d[i*t.N+b0+b] = v
			}
		}
	}
	return d, nil
}

// ChunkLimits are the finalize step's output for a chunk of points: the
// jackknife+ limits and m, the number of residuals each was built from;
// Covered[a] counts the labelled points whose jackknife+ interval at
// level alphas[a] covers the target, and Labelled the labelled points
// (the calibration curve of a self-audit or labelled test set, summed
// over chunks: integers, so the sum does not depend on their order).
type ChunkLimits struct {
	Lo, Up   []float64
	M        []int
	Covered  []int
	Labelled int
}

// shiftBuffers are FinalizeLimits' shift matrices, reused from chunk to
// chunk (at a million blocks, 256 MB each: allocating and zeroing one per
// chunk cost more than the selections).
var shiftBuffers = sync.Pool{New: func() any { return new([]float64) }}

// FinalizeLimits is the finalize step for a chunk of points: their
// jackknife+ limits at level alpha from V± = F + Delta_b(x) ± r_b over the
// blocks b with a residual at the point's forecast slot, leaving out the
// block Skip (docs/design.md, section 5.3; jackknifePlus), m the number of such
// blocks, and, for the labelled points, their coverage at every level of
// alphas (nil: none). From indexMinBlocks blocks on it bounds the shifts
// and forms only those near the order statistics (finalizeIndexed,
// limitsindex.go; the same limits, bit for bit); otherwise, or where the
// bounds settle too little, it holds the chunk's q × N shifts, and
// nothing else that grows with N × points. The LowRank solver's limits
// phase is this function over chunks of the evaluation points
// (TableSpec.Finalize, which builds the table's index once; this
// function builds it at every call).
func FinalizeLimits(alpha float64, alphas []float64, t *BlockTable, pts []PointRecord) (ChunkLimits, error) {
	if t.N < indexMinBlocks {
		return finalizeFull(alpha, alphas, t, pts)
	}
	return finalizeIndexed(alpha, alphas, t, newLimitsIndex(t, 1), pts)
}

// finalizeFull is FinalizeLimits from every block's shift at every point
// of the chunk (q × N floats at once): the reference, and the fallback of
// finalizeIndexed where bounds do not settle enough blocks.
func finalizeFull(alpha float64, alphas []float64, t *BlockTable, pts []PointRecord) (ChunkLimits, error) {
	buf := shiftBuffers.Get().(*[]float64)
	defer shiftBuffers.Put(buf)
	d, err := t.shiftsInto(*buf, pts)
	if err != nil {
		return ChunkLimits{}, err
	}
	*buf = d
	n := len(pts)
	out := ChunkLimits{Lo: make([]float64, n), Up: make([]float64, n), M: make([]int, n), Covered: make([]int, len(alphas))}
	vm, vp := make([]float64, 0, t.N), make([]float64, 0, t.N)
	for i, p := range pts {
		vm, vp = vm[:0], vp[:0]
		if p.Forecast >= 0 {
			row := d[i*t.N : (i+1)*t.N]
			for b, sh := range row {
				r := t.Res[b*t.F+p.Forecast]
				if math.IsNaN(r) || b == p.Skip {
					continue
				}
				f := p.F + sh
				vm = append(vm, f-r)
				vp = append(vp, f+r)
			}
		}
		if p.Labelled && len(alphas) > 0 {
			interval.CountCovered(alphas, p.Y, vm, vp, out.Covered)
			out.Labelled++
		}
		out.Lo[i], out.Up[i] = interval.JackknifePlus(alpha, vm, vp)
		out.M[i] = len(vp)
	}
	return out, nil
}
