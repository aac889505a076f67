package audit

// The LowRank solver's streaming path (issue 12): it replaces the phases
// block gradients, influence, residuals and perturbed predictions of the
// exact path with passes whose memory does not grow with blocks ×
// parameters or blocks × points, and yields the same values the limits
// and summary phases read: the residual entries by forecast, a perturbed
// implementation (linearPreds), diagnostics and warnings. Its steps are
// scale.go's map, combine and finalize functions:
//
//	curvature    hvp.NewLowRank on a subsample of the training batches
//	             (at most curvatureMaxSeqs sequences), rank k, the
//	             complement constant chosen with the output-Jacobian rows
//	             of probeSeqs training sequences (InverseProbe)
//	leverage     the probes' mean own leverage picks the rule (lowLeverage)
//	block pass   per chunk of streamBatch training sequences: gradients
//	             (and Jacobian rows under the Newton rule), steps delta_b
//	             in the factor's coordinates (hvp.Reduced: MapBlock's
//	             BlockRecord without the P-vector); CombineBlocks ->
//	             BlockTable
//	refinement   Newton rule: blocks with a leverage eigenvalue above
//	             RefineLeverage re-solved by PCG (refine.go)
//	test points  per chunk of evaluated sequences: Jacobian rows,
//	             MapPoints -> PointRecord (G_x = U J_x^T)
//	perturbed    linearPreds: f(x) + G_x · A_b by BlockTable.Shifts, for
//	             as many points at a time as linearBytes allows
//
// Peak memory is about 8 bytes × (k P (the factor) + workers ×
// streamBatch × (1 + F) × P (the chunks in flight, F the forecasts per
// sequence under the Newton rule, 0 otherwise) + n (k + F) (the block
// table) + points × k) + linearBytes (the shifts of the points in
// flight; twice that while a chunk is computed), independent of n × P
// and of n × points.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

const (
	// curvatureMaxSeqs bounds the training sequences the low-rank
	// curvature is built from: with more, it comes from a seeded
	// subsample of the training batches (of at most wholeBatch sequences)
	// holding at most curvatureMaxSeqs sequences, scaled to the whole
	// (hvp.LowRankOptions.Subsample). The curvature is a mean over
	// sequences; a few thousand of them estimate its top eigen-directions
	// well, and every curvature product then costs the same whatever n
	// (on the 64-unit LSTM, 17,217 parameters, a product over 1000
	// sequences takes about 0.2 s on 2 cores, and the factor some 400
	// products: 10,000 sequences would take 15 minutes).
	curvatureMaxSeqs = 2000
	// probeSeqs is the number of training sequences, drawn with the
	// seed, whose output-Jacobian rows choose the factor's complement
	// constant (hvp.LowRankOptions.InverseProbe) and estimate the mean own
	// leverage.
	probeSeqs = 16
	// lowLeverage is the probes' mean own leverage below which the
	// block pass skips the per-block Jacobian rows: the steps are the
	// infinitesimal ones, A g_b, and the own residuals the in-sample
	// ones |y - f(x; theta_hat)|, which the leave-out ones exceed by a
	// factor of about 1/(1 - leverage), within 1%.
	lowLeverage = 0.01
	// streamBatch is the number of sequences per chunk of the streaming
	// passes: small, so that a chunk's gradients and Jacobian rows
	// (streamBatch × (1 + F) × P floats) stay small.
	streamBatch = 64
	// linearPreds computes the shifts of a chunk of points under every
	// block at once (one matrix product, which reads the whole block
	// table: the more points per chunk, the fewer passes over it) and
	// keeps linearCache such chunks per worker; the chunk has
	// linearBytes / (8 n chunks kept) points, n the blocks, at least
	// linearChunkMin and at most linearChunkMax.
	linearBytes    = 192 << 20
	linearChunkMin = 32
	linearChunkMax = 512
	linearCache    = 2
)

// lowRankRank is the LowRank solver's rank k: opt when positive, else
// clamp(P/4, 40, 200), at most P. Auto takes LowRank only above
// AutoExactMax parameters, where this is 200; the floor P/4 matters for
// smaller models audited with Solver LowRank: on examples/synthetic (481
// parameters) rank 40 (P/12) left the coverage 1.3 points above the
// exact solver's, rank 120 0.5 points.
func lowRankRank(P, opt int) int {
	if opt > 0 {
		return min(opt, P)
	}
	return min(P, max(40, min(200, P/4)))
}

// lowRankPath is the LowRank solver's streaming path: it returns the
// influence phase's output (delta nil: the steps are never kept), the
// leave-one-block-out residuals and the perturbed predictions of the
// evaluation points ev; mark is called as its phases begin.
func lowRankPath(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*influence, *looResiduals, perturbed, error) {
	if p.scheme.Kind != blocks.Sequences {
		return nil, nil, nil, errs.Fix([]Option{OptSolver}, "audit: the low-rank solver takes sequence blocks, not %s blocks: choose another solver", p.scheme.Kind)
	}
	if p.opt.Curvature != hvp.GaussNewton {
		return nil, nil, nil, errs.Fix([]Option{OptSolver, OptCurvature}, "audit: the low-rank solver needs the Gauss-Newton curvature: choose another solver, or the Gauss-Newton curvature")
	}
	mark("curvature")
	inf := &influence{estimator: p.opt.Estimator}
	d := &inf.diag
	P := len(p.theta)
	terms, err := p.ownTerms()
	if err != nil {
		return nil, nil, nil, err
	}

	// Probes: the output-Jacobian rows of probeSeqs training sequences.
	n := p.train.Len()
	r := rand.New(rand.NewPCG(p.opt.Seed, 0x70726f6265))
	var probeIdx []int
	for _, i := range r.Perm(n) {
		if len(terms[i]) > 0 {
			probeIdx = append(probeIdx, i)
		}
		if len(probeIdx) == probeSeqs {
			break
		}
	}
	sub := *p.train
	sub.Seqs = make([]*blocks.Sequence, len(probeIdx))
	for j, i := range probeIdx {
		sub.Seqs[j] = p.train.Seqs[i]
	}
	ps, err := newRowStream(p, &sub, streamBatch)
	if err != nil {
		return nil, nil, nil, err
	}
	slots := make([][][]float64, len(probeIdx))
	err = ps.run(ctx, false, true, func(_ int, gr *group, _, rows [][][]float64) error {
		for b, j := range gr.seqs {
			for _, t := range terms[probeIdx[j]] {
				slots[j] = append(slots[j], slices.Clone(rows[b][t.forcast]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var probeRows [][]float64
	var probeTerms []ownTerm
	for j, i := range probeIdx {
		probeRows = append(probeRows, slots[j]...)
		probeTerms = append(probeTerms, terms[i]...)
	}

	// Curvature.
	whole := p.objective(p.groups)
	rho := p.opt.Damping
	if rho == 0 {
		rho = hvp.DefaultDampingFor(p.opt.Curvature, p.opt.Ridge)
	}
	lo := &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: lowRankRank(P, p.opt.Rank), Damping: rho,
		InverseProbe: probeRows, Seed: p.opt.Seed,
		Progress: func(done, total int) { p.opt.progress("curvature", done, total) }}
	if m := curvatureMaxSeqs * len(p.groups) / n; m < len(p.groups) {
		lo.Subsample = max(1, m)
	}
	f, err := hvp.NewLowRank(ctx, whole, p.theta, lo)
	if err != nil {
		return nil, nil, nil, err
	}
	d.Rank, d.Products = f.Rank(), f.Products
	inf.notes = append(inf.notes, fmt.Sprintf("The perturbed predictions are linearised: f(x) + J_x (theta_-b - theta), with J_x (theta_-b - theta) taken in the rank-%d basis of the curvature factor, not forward passes at theta_-b.", f.Rank()))
	d.Lambda, d.Trace, d.MinEig, d.MaxEig = f.Lambda, f.Trace, math.NaN(), math.NaN()
	if len(f.S) > 0 {
		d.MaxEig = f.S[0]
	}
	inf.damping = rho
	d.CurvatureSequences = n
	if f.Drawn != nil {
		d.CurvatureSequences = 0
		for _, c := range f.Drawn {
			d.CurvatureSequences += len(p.groups[c].seqs)
		}
	}
	if d.CurvatureSequences < n {
		inf.notes = append(inf.notes, fmt.Sprintf("The low-rank curvature (rank %d, %d products) comes from %d of the %d training sequences (%d of %d batches drawn with the seed; at most %d sequences), scaled to the whole.",
			d.Rank, d.Products, d.CurvatureSequences, n, len(f.Drawn), len(p.groups), curvatureMaxSeqs))
	}
	if f.Trace <= 0 {
		inf.warn(Warning{Code: NonPositiveTrace, Step: -1, Figure: f.Trace})
	}

	// Leverage rule: the probes' mean own leverage.
	AJp := make([][]float64, len(probeRows))
	if err := f.SolveAll(ctx, AJp, probeRows); err != nil {
		return nil, nil, nil, err
	}
	loss := p.opt.Loss
	sum := 0.0
	for a, t := range probeTerms {
		sum += t.w * loss.SecondDerivative(t.y, t.fx) * dotv(probeRows[a], AJp[a])
	}
	d.LeverageEstimate = ratio(sum, float64(len(probeTerms)))
	probeRows, AJp = nil, nil
	threshold := lowLeverage
	if p.opt.leverageRule != 0 {
		threshold = p.opt.leverageRule
	}
	withRows := !(d.LeverageEstimate < threshold)
	if withRows {
		d.LeverageRule = "per-block"
	} else {
		d.LeverageRule = "in-sample"
		if inf.estimator == Newton {
			inf.estimator = Infinitesimal
		}
		inf.notes = append(inf.notes, fmt.Sprintf("The mean own leverage of %d probe sequences is %.3g, below %g: the leave-one-block-out steps are the infinitesimal ones and the own residuals the in-sample ones (no per-block Jacobian rows); the leave-out residuals would be larger by a factor of about 1/(1 - leverage).",
			len(probeIdx), d.LeverageEstimate, threshold))
	}

	// Block pass.
	mark("block pass")
	basis := &ShiftBasis{P: P, U: f.U}
	nF := maxForecasts(p)
	bp, err := blockPass(ctx, p, f, basis, terms, nF, withRows, inf.estimator == Newton)
	if err != nil {
		return nil, nil, nil, err
	}
	if withRows && inf.estimator == Newton {
		if err := refineNewton(ctx, p, f, basis, terms, nF, bp, inf, mark); err != nil {
			return nil, nil, nil, err
		}
	}
	table, err := CombineBlocks(bp.recs)
	if err != nil {
		return nil, nil, nil, err
	}
	bp.recs = nil
	d.GradNorm = norm(bp.total)
	d.BlockGradMedian = median(bp.gnorm)
	if d.BlockGradMedian > 0 {
		d.Stationarity = d.GradNorm / d.BlockGradMedian
	}
	if d.Stationarity > StationarityBound {
		inf.warn(Warning{Code: NotStationary, Step: -1, Figure: d.Stationarity, Bound: StationarityBound})
	}
	d.InfluenceNorms = bp.norms
	bl := p.scheme.Blocks
	if withRows {
		inf.leverageDiagnostics(bp.lev, func(k int) []ownTerm { return terms[bl[k].Seq] }, bp.unbounded, bp.levMax, bl)
	}
	loo := &looResiduals{entries: map[forecast][]entry{}, shift: bp.shift}
	for k, b := range bl {
		for _, t := range terms[b.Seq] {
			loo.entries[t.f] = append(loo.entries[t.f], entry{blk: k, seq: b.Seq, r: table.Res[k*table.F+t.forcast]})
		}
	}
	if !withRows {
		if err := influentialShifts(ctx, p, f, terms, bp.norms, loo.shift); err != nil {
			return nil, nil, nil, err
		}
	}

	// Test side.
	mark("test points")
	pts, err := testRecords(ctx, p, ev, basis)
	if err != nil {
		return nil, nil, nil, err
	}
	return inf, loo, newLinearPreds(&table, pts, p.workers), nil
}

// blockPassOut is what the block pass keeps: per block its record, |g_b|,
// |delta_b|, mean own prediction shift and (per-block rule) leverage;
// and the total gradient.
type blockPassOut struct {
	recs      []BlockRecord
	gnorm     []float64
	norms     []float64
	shift     []float64
	lev       [][]float64
	levMax    []float64
	unbounded []bool
	total     []float64
}

// blockPass streams the training sequences' gradients (and, withRows,
// their Jacobian rows) chunk by chunk, turns each into its step delta_b
// (newton: the Newton step, else A g_b) and own residuals, and keeps of
// it the BlockRecord of basis and the figures of blockPassOut. The total
// gradient is summed chunk by chunk in chunk order, so that it does not
// depend on the order in which the workers finish.
//
// The steps are never formed in parameter space: with A the factor's
// solve, U A b = diag(1/(S + lambda)) U b, and b^T A b', |A b| follow
// from U b, U b' and b·b' (hvp.Reduced), so a chunk costs one k×P
// matrix product with its gradients and Jacobian rows (projectRows) and
// their inner products within each block, where MapBlock of SolveAll's
// steps costs two such products and a third per block. The records
// equal MapBlock's up to rounding (TestBlockPassReduced). basis must be
// f's U without a sketch.
func blockPass(ctx context.Context, p *problem, f *hvp.LowRank, basis *ShiftBasis, terms [][]ownTerm, nF int, withRows, newton bool) (*blockPassOut, error) {
	if basis.KS() != 0 || basis.K() != f.Rank() {
		return nil, fmt.Errorf("audit: the block pass takes the factor's %d rows without a sketch, not %d+%d", f.Rank(), basis.K(), basis.KS())
	}
	red, err := f.Reduce()
	if err != nil {
		return nil, err
	}
	bl := p.scheme.Blocks
	nb := len(bl)
	blockOf := make([]int, p.train.Len())
	for i := range blockOf {
		blockOf[i] = -1
	}
	for k, b := range bl {
		blockOf[b.Seq] = k
	}
	out := &blockPassOut{recs: make([]BlockRecord, nb), gnorm: make([]float64, nb), norms: make([]float64, nb), shift: make([]float64, nb)}
	if withRows {
		out.lev, out.levMax, out.unbounded = make([][]float64, nb), make([]float64, nb), make([]bool, nb)
	}
	P, k := len(p.theta), f.Rank()
	s, err := newRowStream(p, p.train, streamBatch)
	if err != nil {
		return nil, err
	}
	out.total = make([]float64, P)
	if p.opt.Ridge != 0 {
		addTo(out.total, p.theta, p.opt.Ridge)
	}
	fold := newOrderedFold(out.total)
	done := 0
	var mu sync.Mutex
	loss := p.opt.Loss
	err = s.run(ctx, true, withRows, func(c int, gr *group, grads, rows [][][]float64) error {
		// The chunk's vectors: per sequence its gradient, then (withRows)
		// the Jacobian rows of its terms; their coordinates in U.
		var vecs [][]float64
		first := make([]int, len(gr.seqs))
		for b, i := range gr.seqs {
			first[b] = len(vecs)
			vecs = append(vecs, grads[b][0])
			if withRows {
				for _, t := range terms[i] {
					vecs = append(vecs, rows[b][t.forcast])
				}
			}
		}
		uv := projectRows(f.U, P, vecs)
		partial := make([]float64, P)
		for b, i := range gr.seqs {
			g := grads[b][0]
			addTo(partial, g, 1)
			kb := blockOf[i]
			if kb < 0 {
				continue
			}
			ts := terms[i]
			gg := dotv(g, g)
			out.gnorm[kb] = math.Sqrt(gg)
			// b = g + J^T z: its coordinates in U and |b|^2 (z nil: b = g).
			ug := uv[first[b]]
			ub, bb := ug, gg
			res, shift := make([]float64, len(ts)), make([]float64, len(ts))
			if withRows {
				m := len(ts)
				uj := uv[first[b]+1 : first[b]+1+m]
				J := make([][]float64, m)
				jg := make([]float64, m)
				v := make([]float64, m)
				for a, t := range ts {
					J[a] = rows[b][t.forcast]
					jg[a] = dotv(J[a], g)
					v[a] = red.Form(uj[a], ug, jg[a])
				}
				if newton && m > 0 {
					K := mat.NewSymDense(m, nil)
					jj := make([]float64, m*m)
					for a := 0; a < m; a++ {
						for e := a; e < m; e++ {
							jj[a*m+e] = dotv(J[a], J[e])
							jj[e*m+a] = jj[a*m+e]
							K.SetSym(a, e, red.Form(uj[a], uj[e], jj[a*m+e]))
						}
					}
					st, z, err := newtonReduced(loss, ts, K, v)
					if err != nil {
						return fmt.Errorf("audit: block %s: %w", bl[kb].Label, err)
					}
					res, shift = st.res, st.shift
					out.lev[kb], out.levMax[kb], out.unbounded[kb] = st.lev, st.levMax, st.unbounded
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
			out.recs[kb] = BlockRecord{A: red.Top(make([]float64, k), ub), S: []float64{}, Res: out.own(kb, ts, nF, res, shift)}
			out.norms[kb] = math.Sqrt(red.Norm2(ub, bb))
		}
		fold.add(c, partial)
		mu.Lock()
		done += len(gr.seqs)
		p.opt.progress("block pass", done, p.train.Len())
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// projectChunk is the number of vectors projectRows multiplies at once.
const projectChunk = 64

// projectRows returns U v (k numbers) for every vector v of vecs, with U
// k×P row-major: a k×P by P×projectChunk matrix product per
// projectChunk vectors.
func projectRows(U []float64, P int, vecs [][]float64) [][]float64 {
	k := len(U) / P
	out := make([][]float64, len(vecs))
	flat := make([]float64, len(vecs)*k)
	for j := range out {
		out[j] = flat[j*k : (j+1)*k]
	}
	if k == 0 {
		return out
	}
	nb := min(projectChunk, len(vecs))
	vt := make([]float64, P*nb) // P × nb: the vectors as columns
	ct := make([]float64, k*nb)
	for lo := 0; lo < len(vecs); lo += nb {
		hi := min(lo+nb, len(vecs))
		w := hi - lo
		for j, v := range vecs[lo:hi] {
			for i, x := range v {
				vt[i*w+j] = x
			}
		}
		graph.MatMul(false, false, k, w, P, U, vt[:P*w], ct[:k*w])
		for i := 0; i < k; i++ {
			for j, x := range ct[i*w : (i+1)*w] {
				out[lo+j][i] = x
			}
		}
	}
	return out
}

// own records block k's mean own prediction shift and returns its own
// terms' (ts) residuals res by forecast position (nF of them, NaN where
// the block has no term): the Res of its BlockRecord.
func (out *blockPassOut) own(k int, ts []ownTerm, nF int, res, shift []float64) []float64 {
	byPos := make([]float64, nF)
	for j := range byPos {
		byPos[j] = math.NaN()
	}
	sh := 0.0
	for a, t := range ts {
		byPos[t.forcast] = res[a]
		sh += shift[a]
	}
	if len(ts) > 0 {
		out.shift[k] = sh / float64(len(ts))
	}
	return byPos
}

// keep stores block k's step delta and its own terms' (ts) residuals res
// and prediction shifts shift: its BlockRecord of basis (residuals by
// forecast position, nF of them, NaN where it has no term), |delta| and
// the mean shift.
func (out *blockPassOut) keep(k int, basis *ShiftBasis, ts []ownTerm, nF int, delta, res, shift []float64) error {
	rec, err := MapBlock(basis, delta, out.own(k, ts, nF, res, shift))
	if err != nil {
		return err
	}
	out.recs[k] = rec
	out.norms[k] = norm(delta)
	return nil
}

// orderedFold adds vectors numbered 0, 1, 2, ... into a sum in their
// numbers' order whatever the order they arrive in, keeping only those
// that came early: floating-point sums that do not depend on scheduling.
type orderedFold struct {
	mu      sync.Mutex
	sum     []float64
	next    int
	waiting map[int][]float64
}

func newOrderedFold(sum []float64) *orderedFold {
	return &orderedFold{sum: sum, waiting: map[int][]float64{}}
}

func (o *orderedFold) add(i int, v []float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waiting[i] = v
	for {
		w, ok := o.waiting[o.next]
		if !ok {
			return
		}
		addTo(o.sum, w, 1)
		delete(o.waiting, o.next)
		o.next++
	}
}

// influentialShifts fills shift[k], the mean |f(x; theta_hat + delta_b)
// - f(x; theta_hat)| over block k's own terms, for the ten blocks with
// the largest norms (the ones the report lists), by recomputing their
// steps A g_b and a forward pass: the in-sample rule keeps no Jacobian
// rows to linearise with.
func influentialShifts(ctx context.Context, p *problem, f hvp.Factor, terms [][]ownTerm, norms, shift []float64) error {
	idx := make([]int, len(norms))
	for i := range idx {
		idx[i] = i
	}
	sortByDesc(idx, norms)
	idx = idx[:min(10, len(idx))]
	bl := p.scheme.Blocks
	partOf := make([]int, p.train.Len())
	for pi, gr := range p.parts {
		partOf[gr.seqs[0]] = pi
	}
	obj := p.objective(p.parts)
	jobs := make([]hvp.Job, len(idx))
	for j, k := range idx {
		jobs[j] = hvp.Job{Batch: partOf[bl[k].Seq]}
	}
	g := make([][]float64, len(idx))
	if err := obj.Gradients(ctx, p.theta, jobs, g, nil); err != nil {
		return err
	}
	u := make([][]float64, len(idx))
	if err := f.SolveAll(ctx, u, g); err != nil {
		return err
	}
	th := make([]float64, len(p.theta))
	ws := states{}
	for j, k := range idx {
		i := bl[k].Seq
		gr := p.parts[partOf[i]]
		for a := range th {
			th[a] = p.theta[a] + u[j][a]
		}
		outs, err := ws.get(gr.prog).Forward(th, gr.in)
		if err != nil {
			return err
		}
		sh := 0.0
		for _, t := range terms[i] {
			sh += math.Abs(outs[0].F[p.io.index(1, gr.T, 0, t.f.T, t.f.H)] - t.fx)
		}
		shift[k] = ratio(sh, float64(len(terms[i])))
	}
	return nil
}

// maxForecasts is the most forecast positions of a sequence in the
// training, evaluated and calibration sets.
func maxForecasts(p *problem) int {
	m := 0
	for _, gs := range [][]*group{p.groups, p.evalGroups, p.calGroups} {
		for _, gr := range gs {
			m = max(m, len(p.io.forecasts(gr.T)))
		}
	}
	return m
}

// testRecords streams the output-Jacobian rows of the evaluation points
// (test, then calibration) chunk by chunk and keeps their PointRecords
// (MapPoints), in the order of ev.
func testRecords(ctx context.Context, p *problem, ev *evaluation, basis *ShiftBasis) ([]PointRecord, error) {
	out := make([]PointRecord, len(ev.test)+len(ev.cal))
	total := len(out)
	done := 0
	var mu sync.Mutex
	sets := []struct {
		d   *blocks.Dataset
		pts []point
		off int
	}{{p.eval, ev.test, 0}}
	if p.cal != nil {
		sets = append(sets, struct {
			d   *blocks.Dataset
			pts []point
			off int
		}{p.cal, ev.cal, len(ev.test)})
	}
	for _, set := range sets {
		// The points of each (sequence, forecast).
		type key struct {
			seq int
			f   forecast
		}
		at := make(map[key]int, len(set.pts))
		for i, pt := range set.pts {
			at[key{pt.seq, pt.f}] = set.off + i
		}
		s, err := newRowStream(p, set.d, streamBatch)
		if err != nil {
			return nil, err
		}
		err = s.run(ctx, false, true, func(_ int, gr *group, _, rows [][][]float64) error {
			fs := p.io.forecasts(gr.T)
			var jac [][]float64
			var fx []float64
			var pos, idx []int
			for b, i := range gr.seqs {
				for k, fc := range fs {
					j, ok := at[key{i, fc}]
					if !ok {
						continue
					}
					jac = append(jac, rows[b][k])
					fx = append(fx, ev.predAt(j))
					pos = append(pos, k)
					idx = append(idx, j)
				}
			}
			recs, err := MapPoints(basis, jac, fx, pos)
			if err != nil {
				return err
			}
			for a, j := range idx {
				out[j] = recs[a]
			}
			mu.Lock()
			done += len(idx)
			p.opt.progress("test points", done, total)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// predAt is the trained model's prediction at evaluation point j (test,
// then calibration).
func (ev *evaluation) predAt(j int) float64 {
	if j < len(ev.test) {
		return ev.test[j].pred
	}
	return ev.cal[j-len(ev.test)].pred
}

// rowStream streams, batch by batch of a dataset's sequences, every
// sequence's loss gradient and its output-Jacobian rows (one per forecast
// position) to a function of the whole batch (hvp.Objective.
// StreamExampleGradients: one gradient job and one Outputs job per
// forecast position per batch, assembled as they arrive). Only the
// batches in flight are held.
type rowStream struct {
	p      *problem
	groups []*group
	obj    *hvp.Objective
	mu     sync.Mutex
	free   [][]float64 // rows of length P to reuse
}

// newRowStream batches d's sequences by length, at most size per batch.
func newRowStream(p *problem, d *blocks.Dataset, size int) (*rowStream, error) {
	gs, err := p.makeGroups(d, size)
	if err != nil {
		return nil, err
	}
	s := &rowStream{p: p, groups: gs, obj: p.objective(gs)}
	for c := range s.obj.Batches {
		s.obj.Batches[c].ExampleAxes = p.io.exampleAxes()
	}
	return s, nil
}

// batchFunc receives batch c (group gr) of a rowStream: grads[b][0] the
// loss gradient of its sequence b (when asked for) and rows[b][k] the
// gradient of its output at forecast position k (when asked for). The
// slices are reused after it returns: it must not keep them.
type batchFunc func(c int, gr *group, grads, rows [][][]float64) error

// run streams the batches to f (concurrently, up to the workers; see
// batchFunc), with the gradients when grad and the Jacobian rows when
// rows.
func (s *rowStream) run(ctx context.Context, grad, rows bool, f batchFunc) error {
	p := s.p
	type jobOf struct{ batch, pos int } // pos -1: the gradient
	var jobs []hvp.Job
	var which []jobOf
	masks := map[[3]int][]float64{}
	for c, gr := range s.groups {
		if grad {
			jobs = append(jobs, hvp.Job{Batch: c})
			which = append(which, jobOf{c, -1})
		}
		if !rows {
			continue
		}
		B := len(gr.seqs)
		for k, fc := range p.io.forecasts(gr.T) {
			key := [3]int{B, gr.T, k}
			w, ok := masks[key]
			if !ok {
				w = make([]float64, len(gr.weight))
				for b := 0; b < B; b++ {
					w[p.io.index(B, gr.T, b, fc.T, fc.H)] = 1
				}
				masks[key] = w
			}
			jobs = append(jobs, hvp.Job{Batch: c, Weight: w, Outputs: true})
			which = append(which, jobOf{c, k})
		}
	}
	type asm struct {
		left        int
		grads, rows [][][]float64
	}
	pending := map[int]*asm{}
	P := len(p.theta)
	return s.obj.StreamExampleGradients(ctx, p.theta, jobs, func(_, job int, g [][]float64, _ []float64) error {
		jw := which[job]
		gr := s.groups[jw.batch]
		s.mu.Lock()
		a, ok := pending[jw.batch]
		if !ok {
			a = &asm{}
			nf := 0
			if rows {
				nf = len(p.io.forecasts(gr.T))
				a.rows = make([][][]float64, len(gr.seqs))
			}
			if grad {
				a.grads = make([][][]float64, len(gr.seqs))
				a.left++
			}
			a.left += nf
			for b := range gr.seqs {
				if grad {
					a.grads[b] = [][]float64{s.get(P)}
				}
				if rows {
					a.rows[b] = make([][]float64, nf)
					for k := range a.rows[b] {
						a.rows[b][k] = s.get(P)
					}
				}
			}
			pending[jw.batch] = a
		}
		s.mu.Unlock()
		for b := range gr.seqs {
			if jw.pos < 0 {
				copy(a.grads[b][0], g[b])
			} else {
				copy(a.rows[b][jw.pos], g[b])
			}
		}
		s.mu.Lock()
		a.left--
		complete := a.left == 0
		if complete {
			delete(pending, jw.batch)
		}
		s.mu.Unlock()
		if !complete {
			return nil
		}
		err := f(jw.batch, gr, a.grads, a.rows)
		s.mu.Lock()
		for _, v := range a.grads {
			s.free = append(s.free, v...)
		}
		for _, v := range a.rows {
			s.free = append(s.free, v...)
		}
		s.mu.Unlock()
		return err
	})
}

// get returns a row of length P, reused when one is free (under s.mu).
func (s *rowStream) get(P int) []float64 {
	if n := len(s.free); n > 0 {
		v := s.free[n-1]
		s.free = s.free[:n-1]
		return v
	}
	return make([]float64, P)
}

// linearPreds is perturbed from the block table: the prediction at point
// p of block b's model is F_p + G_p · A_b (BlockTable.Shifts), computed
// for chunk points at a time and kept for a few chunks, so that blocks ×
// points never exist at once.
type linearPreds struct {
	t     *BlockTable
	pts   []PointRecord
	chunk int
	mu    sync.Mutex
	cache map[int]*shiftChunk
	order []int
	keep  int
}

// shiftChunk is the shifts of one chunk of points, computed once.
type shiftChunk struct {
	once sync.Once
	d    []float64
}

func newLinearPreds(t *BlockTable, pts []PointRecord, workers int) *linearPreds {
	keep := linearCache * max(1, workers)
	chunk := min(linearChunkMax, max(linearChunkMin, linearBytes/(8*max(1, t.N)*keep)))
	return &linearPreds{t: t, pts: pts, chunk: chunk, cache: map[int]*shiftChunk{}, keep: keep}
}

func (l *linearPreds) blocks() int { return l.t.N }

func (l *linearPreds) point(p int, dst []float64) []float64 {
	c := p / l.chunk
	l.mu.Lock()
	ch, ok := l.cache[c]
	if !ok {
		ch = &shiftChunk{}
		l.cache[c] = ch
		l.order = append(l.order, c)
		if len(l.order) > l.keep {
			delete(l.cache, l.order[0])
			l.order = l.order[1:]
		}
	}
	l.mu.Unlock()
	ch.once.Do(func() {
		lo := c * l.chunk
		d, err := l.t.Shifts(l.pts[lo:min(len(l.pts), lo+l.chunk)])
		if err != nil {
			// The records are built to agree with the table.
			panic(err)
		}
		ch.d = d
	})
	N := l.t.N
	row := ch.d[(p%l.chunk)*N : (p%l.chunk+1)*N]
	f := l.pts[p].F
	for b, s := range row {
		dst[b] = f + s
	}
	return dst
}

var _ perturbed = (*linearPreds)(nil)
