package audit

// Refinement of the low-rank path's Newton steps. With the
// exact inverse A = (C + lambda I)^-1 a block's leverage matrix S_b =
// Lambda^1/2 J_b A J_b^T Lambda^1/2 has eigenvalues below 1, since C is
// at least the block's own curvature C_b. The low-rank factor replaces
// C on the complement of its subspace by one constant; where the true
// curvature there exceeds it, the factor overestimates A and can push
// an eigenvalue of S_b to 1 or beyond: an unbounded block the exact path
// does not have (examples: rnn100s of benchmarks/influence at rank 120
// of 481, 31 of 100 blocks). The blocks whose low-rank leverage is
// suspicious get A J_b^T and A g_b again by conjugate gradients on the
// factor's own curvature, preconditioned by the factor
// (hvp.LowRank.SolvePCG), and their Newton step anew. It holds the
// gradients and Jacobian rows of refineChunk blocks (refineChunk × (1 +
// F) × P floats) and a block's CG vectors (4 (1 + F) P floats) at a
// time.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/rnnaudit/rnnaudit/audit/solvecost"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

const (
	// refineTol is the relative residual of the refinement's CG solves,
	// refineMaxIter their most iterations per vector. On rnn100s the
	// refined leverage eigenvalues at 1e-3 differ from those at 1e-6 by
	// at most 0.001, for 45% of the products.
	refineTol     = 1e-4
	refineMaxIter = 300
	// refineIterGuess is the products per right-hand side assumed for
	// the first block (measured: 20 on rnn100s at refineTol).
	refineIterGuess = 20
	// refineChunk is the number of candidate blocks whose gradients and
	// Jacobian rows are computed at once.
	refineChunk = 16
)

// refined is what refineBlocks reports: the blocks refined, the
// candidates left at their low-rank values by the budget, the products
// taken and the largest relative residual of the CG solves.
type refined struct {
	blocks, skipped, products int
	residual                  float64
}

// refineBlocks re-solves, for the blocks of out whose low-rank largest
// leverage eigenvalue exceeds RefineLeverage (or is unbounded), u = A
// g_b and A J_b^T by f.SolvePCG on the curvature f was built from, to
// refineTol, and replaces their Newton step, record, residuals, shift
// and leverage in out (solvecost.RefineBudget bounds its cost). The
// blocks' gradients and Jacobian rows are computed again, refineChunk
// blocks at a time; the solves run one block after another, so the
// result does not depend on the workers.
func (lr *lowRankPass) refineBlocks(ctx context.Context, seqs int, out *blockPassOut) (refined, error) {
	p, f, terms := lr.p, lr.f, lr.terms
	var rf refined
	var cand []int
	for k := range out.levMax {
		if out.suspicious(k) {
			cand = append(cand, k)
		}
	}
	if len(cand) == 0 {
		return rf, nil
	}
	key := func(k int) float64 {
		if math.IsNaN(out.levMax[k]) {
			return math.Inf(1)
		}
		return out.levMax[k]
	}
	sort.SliceStable(cand, func(a, b int) bool { return key(cand[a]) > key(cand[b]) })
	op, err := f.OperatorMany(p.objective(lr.curv), hvp.GaussNewton, p.theta)
	if err != nil {
		return rf, err
	}
	budget := solvecost.RefineBudget(f.Products, seqs, len(p.theta))
	perVector := float64(refineIterGuess)
	vectors := 0
	bl := p.scheme.Blocks
	loss := p.opt.Loss
	// Whether the products so far and an estimate of block k's (its
	// right-hand sides times the mean products per vector so far) fit.
	fits := func(k int) bool {
		return float64(rf.products)+float64(1+len(terms[bl[k].Seq]))*perVector <= float64(budget)
	}
	for lo := 0; lo < len(cand) && fits(cand[lo]); lo += refineChunk {
		chunk := cand[lo:min(lo+refineChunk, len(cand))]
		g, rows, err := blockRows(ctx, p, chunk)
		if err != nil {
			return rf, err
		}
		for j, k := range chunk {
			if !fits(k) {
				break
			}
			ts := terms[bl[k].Seq]
			J := make([][]float64, len(ts))
			for a, t := range ts {
				J[a] = rows[j][t.forcast]
			}
			x := make([][]float64, 1+len(J))
			n, res, err := f.SolvePCGMany(ctx, op, x, append([][]float64{g[j]}, J...), refineTol, refineMaxIter)
			rf.products += n
			if err != nil {
				return rf, err
			}
			vectors += len(x)
			perVector = float64(rf.products) / float64(vectors)
			rf.residual = math.Max(rf.residual, res)
			st, err := newtonStep(loss, ts, J, x[1:], x[0])
			if err != nil {
				return rf, errs.Wrapf(err, "audit: block %s: ", bl[k].Label)
			}
			if err := lr.keep(out, k, ts, st.delta, st.res, st.shift); err != nil {
				return rf, err
			}
			out.lev[k], out.levMax[k], out.unbounded[k] = st.lev, st.levMax, st.unbounded
			rf.blocks++
		}
	}
	rf.skipped = len(cand) - rf.blocks
	return rf, nil
}

// suspicious says that block k's largest leverage eigenvalue exceeds
// RefineLeverage, is unbounded or NaN: a candidate for refineBlocks.
func (out *blockPassOut) suspicious(k int) bool {
	return out.unbounded[k] || !(out.levMax[k] <= RefineLeverage)
}

// blockRows returns the loss gradients and output-Jacobian rows (by
// forecast position) of the sequences of blocks ks, in that order.
func blockRows(ctx context.Context, p *problem, ks []int) (g [][]float64, rows [][][]float64, err error) {
	bl := p.scheme.Blocks
	sub := *p.train
	sub.Seqs = make([]*blocks.Sequence, len(ks))
	for j, k := range ks {
		sub.Seqs[j] = p.train.Seqs[bl[k].Seq]
	}
	s, err := newRowStream(p, &sub, streamBatch)
	if err != nil {
		return nil, nil, err
	}
	g, rows = make([][]float64, len(ks)), make([][][]float64, len(ks))
	err = s.run(ctx, true, true, func(_ int, gr *group, grads, rs [][][]float64) error {
		for b, j := range gr.seqs {
			g[j] = slices.Clone(grads[b][0])
			rows[j] = make([][]float64, len(rs[b]))
			for a, r := range rs[b] {
				rows[j][a] = slices.Clone(r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return g, rows, nil
}

// refineNewton runs refineBlocks on the block pass's output bp of the
// low-rank path (a "refinement" phase when some block is a candidate)
// and records its counts in inf's diagnostics, with a note when the
// budget left candidates unrefined.
func refineNewton(ctx context.Context, lr *lowRankPass, bp *blockPassOut, inf *influence, mark func(string)) error {
	p, f := lr.p, lr.f
	for k := range bp.levMax {
		if bp.suspicious(k) {
			mark("refinement")
			break
		}
	}
	rf, err := lr.refineBlocks(ctx, inf.diag.CurvatureSequences, bp)
	if err != nil {
		return err
	}
	d := &inf.diag
	d.RefinedBlocks, d.RefineSkipped, d.RefineProducts = rf.blocks, rf.skipped, rf.products
	if rf.skipped > 0 {
		inf.notes = append(inf.notes, fmt.Sprintf("%d blocks with a low-rank leverage eigenvalue above %g kept their low-rank Newton steps: the refinement by conjugate gradients stopped at its budget of %d curvature products after %d blocks (%d products).",
			rf.skipped, RefineLeverage, solvecost.RefineBudget(f.Products, d.CurvatureSequences, len(p.theta)), rf.blocks, rf.products))
	}
	return nil
}
