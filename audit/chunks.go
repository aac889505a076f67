package audit

// The block pass's map step over plain values: what a worker of a
// distributed executor runs per chunk of training sequences, and what
// the in-process block pass (lowRankPass.blockPass) calls. See the
// package documentation, "Distributed form".

import (
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/table"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// blockSpec is what every chunk of the block pass shares, as plain
// values: the factor's solve in its coordinates (hvp.Reduced) and rows U
// (k×P), the loss, the forecast slots of the block table, and the rule
// (withRows: the per-block rule; newton: Newton steps, else
// infinitesimal ones). A worker that holds it and a blockChunk can run
// mapBlockChunk anywhere.
type blockSpec struct {
	red      hvp.Reduced
	U        []float64
	P        int
	proj     *table.Projector // U's products (table.NewProjector(U, P))
	loss     hvp.Loss
	slots    map[forecast]int
	withRows bool
	newton   bool
}

// blockChunk is one chunk of training sequences of the block pass: per
// sequence b its loss gradient grads[b], output-Jacobian rows by forecast
// position rows[b] (withRows), loss terms terms[b], block blocks[b] (-1:
// none) and the block's label (for errors).
type blockChunk struct {
	grads  [][]float64
	rows   [][][]float64
	terms  [][]ownTerm
	blocks []int
	labels []string
}

// mapBlockChunk is the block pass's map step for one chunk: it turns
// each sequence's gradient (and Jacobian rows) into its step delta_b and
// own residuals, kept as a table.BlockRecord in the factor's coordinates.
//
// The steps are never formed in parameter space: with A the factor's
// solve, U A b = diag(1/(S + lambda)) U b, and b^T A b', |A b| follow
// from U b, U b' and b·b' (hvp.Reduced), so a chunk costs one k×P
// matrix product with its gradients and Jacobian rows (table.Projector) and
// their inner products within each block, where table.MapBlock of SolveAll's
// steps costs two such products and a third per block.
func (s *blockSpec) mapBlockChunk(in blockChunk) (*table.BlockChunkOut, error) {
	red, P, k, loss := s.red, s.P, len(s.red.D), s.loss
	nb := len(in.grads)
	out := table.NewBlockChunkOut(nb, s.withRows)
	// The chunk's vectors: per sequence its gradient, then (withRows)
	// the Jacobian rows of its terms; their coordinates in U.
	var vecs [][]float64
	first := make([]int, nb)
	for b, g := range in.grads {
		first[b] = len(vecs)
		vecs = append(vecs, g)
		if s.withRows {
			for _, t := range in.terms[b] {
				vecs = append(vecs, in.rows[b][t.forcast])
			}
		}
	}
	// The sum of the gradients and their squared norms are taken panel
	// by panel as the projection reads them (the same sums, in the same
	// order, as addTo and dotv over whole vectors).
	out.Total = make([]float64, P)
	sq := make([]float64, nb)      // |g_b|^2
	grad := make([]int, len(vecs)) // per vector: its sequence's index if it is a gradient, else -1
	for j := range grad {
		grad[j] = -1
	}
	for b, j := range first {
		grad[j] = b
	}
	uv := s.proj.Rows(vecs, func(j, p0 int, seg []float64) {
		b := grad[j]
		if b < 0 {
			return
		}
		tot := out.Total[p0 : p0+len(seg)]
		q := sq[b]
		for p, x := range seg {
			tot[p] += x
			q += x * x
		}
		sq[b] = q
	})
	for b, g := range in.grads {
		if in.blocks[b] < 0 {
			continue
		}
		ts := in.terms[b]
		gg := sq[b]
		out.GNorm[b] = math.Sqrt(gg)
		// b = g + J^T z: its coordinates in U and |b|^2 (z nil: b = g).
		ug := uv[first[b]]
		ub, bb := ug, gg
		res, shift := make([]float64, len(ts)), make([]float64, len(ts))
		if s.withRows {
			m := len(ts)
			uj := uv[first[b]+1 : first[b]+1+m]
			J := make([][]float64, m)
			jg := make([]float64, m)
			v := make([]float64, m)
			for a, t := range ts {
				J[a] = in.rows[b][t.forcast]
				jg[a] = num.Dot(J[a], g)
				v[a] = red.Form(uj[a], ug, jg[a])
			}
			if s.newton && m > 0 {
				K := mat.NewSymDense(m, nil)
				jj := make([]float64, m*m)
				for a := 0; a < m; a++ {
					for e := a; e < m; e++ {
						jj[a*m+e] = num.Dot(J[a], J[e])
						jj[e*m+a] = jj[a*m+e]
						K.SetSym(a, e, red.Form(uj[a], uj[e], jj[a*m+e]))
					}
				}
				st, z, err := newtonReduced(loss, ts, K, v)
				if err != nil {
					return nil, errs.Wrapf(err, "audit: block %s: ", in.labels[b])
				}
				res, shift = st.res, st.shift
				out.Lev[b], out.LevMax[b], out.Unbounded[b] = st.lev, st.levMax, st.unbounded
				if z != nil {
					ub = slices.Clone(ug)
					for a, za := range z {
						for i, x := range uj[a] {
							ub[i] += za * x
						}
						bb += 2 * za * jg[a]
						for e, ze := range z {
							bb += za * ze * jj[a*m+e]
						}
					}
				}
			} else {
				for a, t := range ts {
					res[a], shift[a] = math.Abs(t.y-t.fx-v[a]), math.Abs(v[a])
				}
			}
		} else {
			for a, t := range ts {
				res[a] = math.Abs(t.y - t.fx)
			}
		}
		byPos, sh := ownBySlot(s.slots, ts, res, shift)
		out.Recs[b] = table.BlockRecord{A: red.Top(make([]float64, k), ub), S: []float64{}, Res: byPos}
		out.Shift[b] = sh
		out.Norms[b] = math.Sqrt(red.Norm2(ub, bb))
	}
	return out, nil
}

// ownBySlot returns a block's own terms' (ts) residuals res by forecast
// slot (len(slots) of them, NaN where the block has no term): the Res of
// its table.BlockRecord; and its mean own prediction shift (of shift).
func ownBySlot(slots map[forecast]int, ts []ownTerm, res, shift []float64) ([]float64, float64) {
	bySlot := make([]float64, len(slots))
	for j := range bySlot {
		bySlot[j] = math.NaN()
	}
	sh := 0.0
	for a, t := range ts {
		bySlot[slots[t.f]] = res[a]
		sh += shift[a]
	}
	if len(ts) > 0 {
		sh /= float64(len(ts))
	}
	return bySlot, sh
}
