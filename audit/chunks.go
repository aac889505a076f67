package audit

// The block pass's map step over plain values: what a worker of a
// distributed executor runs per chunk of training sequences, and what
// the in-process block pass (lowRankPass.blockPass) calls. See the
// package documentation, "Distributed form".

import (
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
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
	proj     *projector // U's products (newProjector(U, P))
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
// own residuals, kept as a BlockRecord in the factor's coordinates.
//
// The steps are never formed in parameter space: with A the factor's
// solve, U A b = diag(1/(S + lambda)) U b, and b^T A b', |A b| follow
// from U b, U b' and b·b' (hvp.Reduced), so a chunk costs one k×P
// matrix product with its gradients and Jacobian rows (projectRows) and
// their inner products within each block, where MapBlock of SolveAll's
// steps costs two such products and a third per block.
func (s *blockSpec) mapBlockChunk(in blockChunk) (*blockPassOut, error) {
	red, P, k, loss := s.red, s.P, len(s.red.D), s.loss
	nb := len(in.grads)
	out := newBlockPassOut(nb, s.withRows)
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
	out.total = make([]float64, P)
	sq := make([]float64, nb)      // |g_b|^2
	grad := make([]int, len(vecs)) // per vector: its sequence's index if it is a gradient, else -1
	for j := range grad {
		grad[j] = -1
	}
	for b, j := range first {
		grad[j] = b
	}
	uv := s.proj.rows(vecs, func(j, p0 int, seg []float64) {
		b := grad[j]
		if b < 0 {
			return
		}
		tot := out.total[p0 : p0+len(seg)]
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
		out.gnorm[b] = math.Sqrt(gg)
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
				out.lev[b], out.levMax[b], out.unbounded[b] = st.lev, st.levMax, st.unbounded
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
		out.recs[b] = BlockRecord{A: red.Top(make([]float64, k), ub), S: []float64{}, Res: byPos}
		out.shift[b] = sh
		out.norms[b] = math.Sqrt(red.Norm2(ub, bb))
	}
	return out, nil
}

// projectChunk is the number of vectors projectRows multiplies at once.
const projectChunk = 64

// projectPanel is the number of parameters per panel of projectRows'
// products, each summed on its own and then added: a panel of U's rows
// (k × projectPanel floats) and one strip of the vectors stay in the
// core's caches while the strip is multiplied.
const projectPanel = 256

// projectStrip is the number of vectors per strip of a panel: the
// product kernel's tile width (24 columns, three 8-lane registers), so
// that a strip (projectPanel × 24 floats, 48 KB, packed contiguously)
// stays in the first-level cache while every row of U's panel passes
// it.
const projectStrip = 24

// projector computes U v for vectors v of P floats, U k×P row-major,
// read where it lies. Its calls may run concurrently.
type projector struct {
	U    []float64
	P, k int
	// scratch holds *projScratch: a call's working memory, reused (250
	// KB per chunk of 64 at rank 200, 4 GB over the block pass of a
	// million sequences).
	scratch sync.Pool
}

// projScratch is the working memory of one projector.rows call: a strip
// of the vectors, a panel's product and its sum over panels.
type projScratch struct {
	strip, c, acc []float64
}

// newProjector returns the projector of U (k×P).
func newProjector(U []float64, P int) *projector {
	return &projector{U: U, P: P, k: len(U) / P}
}

// rows returns U v (k numbers) for every vector v of vecs: per chunk of
// projectChunk vectors V (columns), the sum over panels of parameters of
// U_panel V_panel^T, each panel's product formed strip by strip of
// vectors (packed, projectStrip wide) and added to the sum (so that every
// coordinate is the same sum, in the same order, whatever the chunk or
// the strips). U's rows are read in place. Measured on 64 gradients at k
// = 200, P = 17,217 (BenchmarkProjectRows, at load 11-15): the product
// with the vectors as rows and U transposed once per projector (27.5 MB)
// ran at 34-37 Gflop per CPU second, with U's rows as rows and the
// vectors' panel transposed whole (128 KB) at 40-45, in strips at 46-52.
//
// each, when not nil, is called with every panel's segment of every
// vector j, seg = vecs[j][p0:p0+len(seg)], panels in order and vectors in
// order within a panel, while the segment is in cache: a pass over the
// vectors' elements that reads nothing from memory a second time.
func (pr *projector) rows(vecs [][]float64, each func(j, p0 int, seg []float64)) [][]float64 {
	k, P := pr.k, pr.P
	out := make([][]float64, len(vecs))
	flat := make([]float64, len(vecs)*k)
	for j := range out {
		out[j] = flat[j*k : (j+1)*k : (j+1)*k]
	}
	if k == 0 || len(vecs) == 0 {
		return out
	}
	nb := min(projectChunk, len(vecs))
	sc, _ := pr.scratch.Get().(*projScratch)
	if sc == nil || len(sc.c) < k*nb {
		sc = &projScratch{strip: make([]float64, projectPanel*projectStrip), c: make([]float64, k*projectChunk), acc: make([]float64, k*projectChunk)}
	}
	defer pr.scratch.Put(sc)
	strip := sc.strip // w × width, row-major
	c := sc.c         // U_panel V_panel^T, k × m
	acc := sc.acc     // its sum over panels
	for lo := 0; lo < len(vecs); lo += nb {
		hi := min(lo+nb, len(vecs))
		m := hi - lo
		clear(acc[:k*m])
		for p0 := 0; p0 < P; p0 += projectPanel {
			w := min(projectPanel, P-p0)
			for t0 := 0; t0 < m; t0 += projectStrip {
				width := min(projectStrip, m-t0)
				for col, v := range vecs[lo+t0 : lo+t0+width] {
					seg := v[p0 : p0+w]
					for p, x := range seg {
						strip[p*width+col] = x
					}
					if each != nil {
						each(lo+t0+col, p0, seg)
					}
				}
				graph.GemmStrided(k, width, w, pr.U[p0:], P, strip[:w*width], width, c[t0:], m, false)
			}
			for i, x := range c[:k*m] {
				acc[i] += x
			}
		}
		for j := range m {
			o := out[lo+j]
			for i := range o {
				o[i] = acc[i*m+j]
			}
		}
	}
	return out
}

// projectRows returns U v (k numbers) for every vector v of vecs, with U
// k×P row-major (newProjector, then rows: for one call; a pass over many
// chunks keeps its projector).
func projectRows(U []float64, P int, vecs [][]float64) [][]float64 {
	return newProjector(U, P).rows(vecs, nil)
}

// ownBySlot returns a block's own terms' (ts) residuals res by forecast
// slot (len(slots) of them, NaN where the block has no term): the Res of
// its BlockRecord; and its mean own prediction shift (of shift).
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
