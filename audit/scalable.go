package audit

// The LowRank solver's influence phase: it streams, so that
// its memory does not grow with blocks × parameters or blocks × points,
// and keeps the leave-one-block-out models as a tableRep, which the
// residual and limits phases read like the dense solvers' steps. Its
// steps are scale.go's map, combine and finalize functions:
//
//	curvature    hvp.NewLowRank on a subsample of the training batches
//	             (at most curvatureMaxSeqs sequences), rank k, the
//	             complement constant chosen with the output-Jacobian rows
//	             of probeSeqs training sequences (probe, InverseProbe)
//	leverage     the probes' mean own leverage picks the rule
//	             (leverageRule, lowLeverage)
//	block pass   per chunk of <= streamBatch sequences (membudget.Stream): gradients
//	             (and Jacobian rows under the per-block rule) in,
//	             mapBlockChunk: steps delta_b in the factor's coordinates
//	             (hvp.Reduced: table.MapBlock's table.BlockRecord without the
//	             P-vector); table.CombineBlocks -> table.BlockTable
//	refinement   Newton rule: blocks with a leverage eigenvalue above
//	             RefineLeverage re-solved by PCG (refine.go)
//	test points  per chunk of evaluated sequences: Jacobian rows,
//	             table.MapPoints -> table.PointRecord (G_x = U J_x^T)
//	limits       table.FinalizeLimits per chunk of points (tableRep.limits):
//	             f(x) + G_x · A_b by table.BlockTable.Shifts, for as many points
//	             at a time as membudget.FinalizeBytes allows
//
// Peak memory is about 8 bytes × (k P (the factor) + workers × chunk ×
// (1 + F) × P (the chunks in flight, F the forecasts per sequence; within
// membudget.StreamShare of the budget) + n (k + F) (the block
// table) + points × k) + membudget.FinalizeBytes (the shifts of the points in
// flight; twice that while a chunk is computed), independent of n × P
// and of n × points.

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/membudget"
	"github.com/rnnaudit/rnnaudit/audit/solvecost"
	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
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
	// probeSeqs is the most training sequences, drawn with the seed, whose
	// output-Jacobian rows choose the factor's complement constant
	// (hvp.LowRankOptions.InverseProbe) and estimate the mean own leverage.
	probeSeqs = 16
	// streamBatch is the most sequences per chunk of the streaming passes
	// (fewer when the memory budget says so: membudget.Stream).
	streamBatch = 64
)

// lowRankInfluence is the LowRank solver's influence phase, streamed:
// the curvature factor, the leverage rule, the block pass (and the
// refinement of its Newton steps), and the test pass, whose output is
// the influence representation in the factor's coordinates (tableRep):
// the steps are never formed in parameter space. mark is called as its
// phases begin.
func lowRankInfluence(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*influence, error) {
	if p.scheme.Kind != blocks.Sequences {
		return nil, errs.Fix([]Option{OptSolver}, "audit: the low-rank solver takes sequence blocks, not %s blocks: choose another solver", p.scheme.Kind)
	}
	if p.opt.Curvature != hvp.GaussNewton {
		return nil, errs.Fix([]Option{OptSolver, OptCurvature}, "audit: the low-rank solver needs the Gauss-Newton curvature: choose another solver, or the Gauss-Newton curvature")
	}
	mark("curvature")
	inf := &influence{estimator: p.opt.Estimator}
	fx, err := p.trainOutputs(ctx)
	if err != nil {
		return nil, err
	}
	inf.fx = fx // the checks after the influence phase read them too
	if p.pool != nil {
		p.pool.release() // nothing after runs these programs forward again
	}
	terms := newTermStore(p, fx)
	slots := forecastSlots(p)
	batch, err := membudget.Stream(p.opt.Memory, len(p.theta), solvecost.Rank(len(p.theta), p.opt.Rank), len(slots), p.workers, len(p.scheme.Blocks), streamBatch)
	if err != nil {
		return nil, err
	}
	pr, err := probe(ctx, p, terms.of, membudget.ProbeSeqs(len(p.theta), len(slots), probeSeqs))
	if err != nil {
		return nil, err
	}
	f, curv, err := lowRankCurvature(ctx, p, pr.rows, inf)
	if err != nil {
		return nil, err
	}
	withRows, err := leverageRule(ctx, p, f, pr, inf)
	if err != nil {
		return nil, err
	}
	// Auto moved from exact returns there when the refinement could cost more than its slack.
	budget := solvecost.RefineBudget(f.Products, inf.diag.CurvatureSequences, len(p.theta))
	refine := solvecost.Refinement(solvecost.ShapeOf(len(p.theta), 0, 0, 0, curvatureMaxSeqs, p.train, nil, nil), budget)
	if back := solvecost.Retreat(p.solverSlack, refine, withRows && inf.estimator == Newton, inf.diag.LeverageEstimate); back != "" {
		return nil, back
	}

	mark("block pass")
	lr := &lowRankPass{p: p, f: f, basis: &table.ShiftBasis{P: len(p.theta), U: f.U}, termsOf: terms.of, slots: slots, batch: batch, curv: curv}
	if withRows {
		// The per-block rule's refinement and diagnostics index every
		// sequence's terms.
		lr.terms = terms.all()
	}
	newton := inf.estimator == Newton
	bp, err := lr.blockPass(ctx, withRows, newton)
	if err != nil {
		return nil, err
	}
	if withRows && newton {
		if err := refineNewton(ctx, lr, bp, inf, mark); err != nil {
			return nil, err
		}
	}
	tab := bp.table
	if err := tab.Fill(bp.recs); err != nil { // the refined blocks' records
		return nil, err
	}
	bp.recs = nil
	inf.stationarity(bp.total, bp.gnorm)
	inf.diag.InfluenceNorms = bp.norms
	bl := p.scheme.Blocks
	if withRows {
		inf.leverageDiagnostics(bp.lev, func(k int) []ownTerm { return lr.terms[bl[k].Seq] }, bp.unbounded, bp.levMax, bl)
	} else if err := influentialShifts(ctx, p, f, terms.of, bp.norms, bp.shift); err != nil {
		return nil, err
	}

	mark("test points")
	test, cal, err := lr.testRecords(ctx, ev)
	if err != nil {
		return nil, err
	}
	inf.rep = &tableRep{table: tab, test: test, cal: cal, shift: bp.shift, basis: lr.basis, slots: lr.slots}
	return inf, nil
}

// probes are the output-Jacobian rows of at most probeSeqs training sequences,
// drawn with the seed, and their loss terms, row for row: they choose the
// factor's complement constant and estimate the mean own leverage.
type probes struct {
	seqs  int
	rows  [][]float64
	terms []ownTerm
}

// probe computes the probes, most of them (membudget.ProbeSeqs), from
// the training sequences' terms (of sequence i: terms(i)).
func probe(ctx context.Context, p *problem, terms func(int) []ownTerm, most int) (probes, error) {
	n := p.train.Len()
	r := rand.New(rand.NewPCG(p.opt.Seed, 0x70726f6265))
	var probeIdx []int
	for _, i := range r.Perm(n) {
		if len(terms(i)) > 0 {
			probeIdx = append(probeIdx, i)
		}
		if len(probeIdx) == most {
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
		return probes{}, err
	}
	slots := make([][][]float64, len(probeIdx))
	err = ps.run(ctx, false, true, func(_ int, gr *group, _, rows [][][]float64) error {
		for b, j := range gr.seqs {
			for _, t := range terms(probeIdx[j]) {
				slots[j] = append(slots[j], slices.Clone(rows[b][t.forcast]))
			}
		}
		return nil
	})
	if err != nil {
		return probes{}, err
	}
	out := probes{seqs: len(probeIdx)}
	for j, i := range probeIdx {
		out.rows = append(out.rows, slots[j]...)
		out.terms = append(out.terms, terms(i)...)
	}
	return out, nil
}

// lowRankCurvature builds the rank-k factor of the damped Gauss-Newton
// matrix (from at most curvatureMaxSeqs sequences, its complement
// constant fitted on the probe rows) and records in inf what it says
// (curvature), its damping and notes.
func lowRankCurvature(ctx context.Context, p *problem, probeRows [][]float64, inf *influence) (*hvp.LowRank, []*group, error) {
	d := &inf.diag
	n := p.train.Len()
	rho := p.opt.Damping
	if rho == 0 {
		rho = hvp.DefaultDampingFor(p.opt.Curvature, math.Inf(1)) // the stationarity is measured later, in the block pass
	}
	lo := &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: solvecost.Rank(len(p.theta), p.opt.Rank), Damping: rho,
		InverseProbe: probeRows, Seed: p.opt.Seed,
		Progress: func(done, total int) { p.opt.progress("curvature", done, total) }}
	groups, gr := p.groups, slices.MaxFunc(p.groups, func(a, b *group) int { return cmp.Compare(a.prog.StateBytes(), b.prog.StateBytes()) })
	if b := membudget.CurvatureBatch(p.opt.Memory, gr.prog.StateBytes(), len(gr.seqs), p.workers); b < len(gr.seqs) {
		var err error // a model too wide for wholeBatch's States: smaller batches
		if groups, err = p.makeGroups(p.train, b); err != nil {
			return nil, nil, err
		}
	}
	if m := curvatureMaxSeqs * len(groups) / n; m < len(groups) {
		lo.Subsample = max(1, m)
	}
	f, err := hvp.NewLowRank(ctx, p.objective(groups), p.theta, lo)
	if err != nil {
		return nil, nil, err
	}
	d.Rank, d.Products = f.Rank(), f.Products
	inf.notes = append(inf.notes, fmt.Sprintf("The perturbed predictions are linearised: f(x) + J_x (theta_-b - theta), with J_x (theta_-b - theta) taken in the rank-%d basis of the curvature factor, not forward passes at theta_-b.", f.Rank()))
	maxEig := math.NaN()
	if len(f.S) > 0 {
		maxEig = f.S[0]
	}
	inf.curvature(f.Lambda, f.Trace, math.NaN(), maxEig)
	inf.damping = rho
	d.CurvatureSequences = n
	if f.Drawn != nil {
		d.CurvatureSequences = 0
		for _, c := range f.Drawn {
			d.CurvatureSequences += len(groups[c].seqs)
		}
	}
	if d.CurvatureSequences < n {
		inf.notes = append(inf.notes, fmt.Sprintf("The low-rank curvature (rank %d, %d products) comes from %d of the %d training sequences (%d of %d batches drawn with the seed; at most %d sequences), scaled to the whole.",
			d.Rank, d.Products, d.CurvatureSequences, n, len(f.Drawn), len(groups), curvatureMaxSeqs))
	}
	return f, groups, nil
}

// leverageRule estimates the mean own leverage from the probes and
// picks the block pass's rule: with Jacobian rows per block (true), or
// the in-sample rule, which makes the estimator the infinitesimal one
// (inf's estimator and a note say so).
func leverageRule(ctx context.Context, p *problem, f *hvp.LowRank, pr probes, inf *influence) (bool, error) {
	d := &inf.diag
	AJp := make([][]float64, len(pr.rows))
	if err := f.SolveAll(ctx, AJp, pr.rows); err != nil {
		return false, err
	}
	loss := p.opt.Loss
	sum := 0.0
	for a, t := range pr.terms {
		sum += t.w * loss.SecondDerivative(t.y, t.fx) * num.Dot(pr.rows[a], AJp[a])
	}
	d.LeverageEstimate = num.Ratio(sum, float64(len(pr.terms)))
	threshold := lowLeverage
	if p.opt.leverageRule != 0 {
		threshold = p.opt.leverageRule
	}
	if !(d.LeverageEstimate < threshold) {
		d.LeverageRule = "per-block"
		return true, nil
	}
	d.LeverageRule = "in-sample"
	if inf.estimator == Newton {
		inf.estimator = Infinitesimal
	}
	inf.notes = append(inf.notes, fmt.Sprintf("The mean own leverage of %d probe sequences is %.3g, below %g: the leave-one-block-out steps are the infinitesimal ones and the own residuals the in-sample ones (no per-block Jacobian rows); the leave-out residuals would be larger by a factor of about 1/(1 - leverage).",
		pr.seqs, d.LeverageEstimate, threshold))
	return false, nil
}

// lowRankPass is what the low-rank path's passes share: the problem, the
// factor f, its basis (U without a sketch), the training sequences'
// terms (termsOf(i); terms holds them all under the per-block rule, nil
// otherwise) and the forecast slots of the block table (forecastSlots).
type lowRankPass struct {
	p       *problem
	f       *hvp.LowRank
	basis   *table.ShiftBasis
	termsOf func(int) []ownTerm
	terms   [][]ownTerm
	slots   map[forecast]int
	batch   int      // sequences per chunk (membudget.Stream; 0: streamBatch)
	curv    []*group // the batches f's curvature comes from (f.Drawn)
}

// termsFor returns training sequence i's terms.
func (lr *lowRankPass) termsFor(i int) []ownTerm {
	if lr.terms != nil {
		return lr.terms[i]
	}
	return lr.termsOf(i)
}

// forecastSlots numbers the forecasts of the training sequences
// (modelio.IO.Slots of the batches' lengths).
func forecastSlots(p *problem) map[forecast]int {
	lens := make([]int, len(p.groups))
	for i, gr := range p.groups {
		lens[i] = gr.T
	}
	return p.io.Slots(lens)
}

// blockPassOut is what the block pass keeps, and mapBlockChunk gives of
// a chunk: per block (of the chunk: per sequence) its record, |g_b|,
// |delta_b|, mean own prediction shift and (per-block rule) leverage;
// and the gradient: of the block pass the total gradient of the training
// objective, of a chunk the sum of its sequences' gradients.
type blockPassOut struct {
	recs      []table.BlockRecord
	gnorm     []float64
	norms     []float64
	shift     []float64
	lev       [][]float64
	levMax    []float64
	unbounded []bool
	total     []float64
	// table holds the records of the block pass (recs are views of its
	// rows), nil in a chunk's output.
	table *table.BlockTable
}

// newBlockPassOut allocates the figures of n blocks (with leverage when
// withRows).
func newBlockPassOut(n int, withRows bool) *blockPassOut {
	out := &blockPassOut{recs: make([]table.BlockRecord, n), gnorm: make([]float64, n), norms: make([]float64, n), shift: make([]float64, n)}
	if withRows {
		out.lev, out.levMax, out.unbounded = make([][]float64, n), make([]float64, n), make([]bool, n)
	}
	return out
}

// blockPass streams the training sequences' gradients (and, withRows,
// their Jacobian rows) chunk by chunk through mapBlockChunk (newton: the
// Newton steps, else A g_b) and gathers its records and figures in
// blockPassOut. The total gradient is the exact sum of the chunks'
// (table.GradientSum), so that it does not depend on the order in which the
// workers finish, nor on where an executor sums them.
func (lr *lowRankPass) blockPass(ctx context.Context, withRows, newton bool) (*blockPassOut, error) {
	p, f := lr.p, lr.f
	if lr.basis.KS() != 0 || lr.basis.K() != f.Rank() {
		return nil, fmt.Errorf("audit: the block pass takes the factor's %d rows without a sketch, not %d+%d", f.Rank(), lr.basis.K(), lr.basis.KS())
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
	out := newBlockPassOut(nb, withRows)
	out.table = table.NewBlockTable(nb, f.Rank(), 0, len(lr.slots))
	P := len(p.theta)
	gs, err := p.makeGroups(p.train, cmp.Or(lr.batch, streamBatch))
	if err != nil {
		return nil, err
	}
	chunks := make([]*table.BlockChunk, len(gs))
	for c, gr := range gs {
		ch := &table.BlockChunk{Seqs: gr.seqs, Blocks: make([]int, len(gr.seqs)), Labels: make([]string, len(gr.seqs))}
		for b, i := range gr.seqs {
			ch.Blocks[b] = blockOf[i]
			if k := blockOf[i]; k >= 0 {
				ch.Labels[b] = bl[k].Label
			}
		}
		chunks[c] = ch
	}
	// The total gradient: the chunks' gradient sums added exactly, so
	// that it does not depend on the order they come in, nor on an
	// engine's summing them on its workers (table.GradientSum).
	sum := table.NewGradientSum(P)
	if p.opt.Ridge != 0 {
		r := make([]float64, P)
		num.AddScaled(r, p.opt.Ridge, p.theta)
		sum.Add(r)
	}
	done := 0
	var mu sync.Mutex
	spec := newFactorSpec(p, f.U, red, lr.slots, withRows, newton)
	bs, err := blockSpecOf(spec)
	if err != nil {
		return nil, err
	}
	gather := func(c int, res *table.BlockChunkOut) error {
		in := chunks[c]
		if err := res.Check(len(in.Seqs), P, withRows); err != nil {
			return err
		}
		for b, k := range in.Blocks {
			if k < 0 {
				continue
			}
			rec, err := out.table.Put(k, res.Recs[b])
			if err != nil {
				return err
			}
			out.recs[k], out.gnorm[k], out.norms[k], out.shift[k] = rec, res.GNorm[b], res.Norms[b], res.Shift[b]
			if withRows {
				out.lev[k], out.levMax[k], out.unbounded[k] = res.Lev[b], res.LevMax[b], res.Unbounded[b]
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if err := sum.Add(res.Total); err != nil {
			return err
		}
		done += len(in.Seqs)
		p.opt.progress("block pass", done, p.train.Len())
		return nil
	}
	// A chunk's terms are made when it is mapped (in process) and
	// dropped after: all of them at once were 0.56 GB at a million
	// sequences.
	termsOf := func(ch *table.BlockChunk) [][]ownTerm {
		terms := make([][]ownTerm, len(ch.Seqs))
		for b, i := range ch.Seqs {
			terms[b] = lr.termsFor(i)
		}
		return terms
	}
	if e := p.opt.Executor; e != nil {
		encs := make([]encoder, len(chunks))
		for c, ch := range chunks {
			terms := termsOf(ch)
			ch.Terms = make([][]table.Term, len(terms))
			for b, ts := range terms {
				ch.Terms[b] = wireTerms(ts)
			}
			encs[c] = ch
		}
		err = table.Execute(ctx, e, table.StageBlocks, spec, encs, func(c int, b []byte) error {
			res := &table.BlockChunkOut{}
			if err := res.UnmarshalBinary(b); err != nil {
				return err
			}
			return gather(c, res)
		})
	} else {
		err = newGroupStream(p, gs).run(ctx, true, withRows, func(c int, _ *group, grads, rows [][][]float64) error {
			res, err := bs.mapChunk(chunks[c], termsOf(chunks[c]), grads, rows)
			if err != nil {
				return err
			}
			return gather(c, res)
		})
	}
	if err != nil {
		return nil, err
	}
	out.total = sum.Round(nil)
	return out, nil
}

// keep stores block k's step delta and its own terms' (ts) residuals res
// and prediction shifts shift in out: its table.BlockRecord of the basis,
// |delta| and the mean shift.
func (lr *lowRankPass) keep(out *blockPassOut, k int, ts []ownTerm, delta, res, shift []float64) error {
	byPos, sh := ownBySlot(lr.slots, ts, res, shift)
	rec, err := table.MapBlock(lr.basis, delta, byPos)
	if err != nil {
		return err
	}
	out.recs[k], out.shift[k] = rec, sh
	out.norms[k] = num.Norm(delta)
	return nil
}

// influentialShifts fills shift[k], the mean |f(x; theta_hat + delta_b)
// - f(x; theta_hat)| over block k's own terms, for the ten blocks with
// the largest norms (the ones the report lists), by recomputing their
// steps A g_b and a forward pass: the in-sample rule keeps no Jacobian
// rows to linearise with.
func influentialShifts(ctx context.Context, p *problem, f hvp.Factor, termsOf func(int) []ownTerm, norms, shift []float64) error {
	idx := make([]int, len(norms))
	for i := range idx {
		idx[i] = i
	}
	num.SortByDesc(idx, norms)
	idx = idx[:min(10, len(idx))]
	bl := p.scheme.Blocks
	// One batch per block listed (the problem keeps no per-sequence
	// batches on this path).
	parts := make([]*group, len(idx))
	for j, k := range idx {
		i := bl[k].Seq
		gr, err := p.newGroup(p.train, p.train.Seqs[i].Len(), []int{i})
		if err != nil {
			return err
		}
		parts[j] = gr
	}
	obj := p.objective(parts)
	jobs := make([]hvp.Job, len(idx))
	for j := range idx {
		jobs[j] = hvp.Job{Batch: j}
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
		gr := parts[j]
		for a := range th {
			th[a] = p.theta[a] + u[j][a]
		}
		outs, err := ws.get(gr.prog).Forward(th, gr.in)
		if err != nil {
			return err
		}
		sh := 0.0
		ts := termsOf(i)
		for _, t := range ts {
			sh += math.Abs(outs[0].F[p.io.Index(1, gr.T, 0, t.f.T, t.f.H)] - t.fx)
		}
		shift[k] = num.Ratio(sh, float64(len(ts)))
	}
	return nil
}

// testRecords is the test pass: it streams the output-Jacobian rows of
// the evaluation points, test then calibration, chunk by chunk and keeps
// their PointRecords (table.MapPoints), in the order of ev. A test point of a
// self-audit leaves out its own sequence's block; the labelled test
// points carry their targets (the calibration curve).
func (lr *lowRankPass) testRecords(ctx context.Context, ev *evaluation) (test, cal []table.PointRecord, err error) {
	p := lr.p
	total := len(ev.test) + len(ev.cal)
	done := 0
	var mu sync.Mutex
	skip := func(pt point) int { return -1 }
	if p.self {
		blockOf := make(map[int]int, len(p.scheme.Blocks))
		for k, b := range p.scheme.Blocks {
			blockOf[b.Seq] = k
		}
		skip = func(pt point) int {
			if k, ok := blockOf[pt.seq]; ok {
				return k
			}
			return -1
		}
	}
	// The executor's points stage ships the factor's spec; a fit's
	// Predict (lr.f nil: the factor is not kept) maps in process.
	var spec *table.FactorSpec
	exec := p.opt.Executor
	if lr.f == nil {
		exec = nil
	}
	if exec != nil {
		red, err := lr.f.Reduce()
		if err != nil {
			return nil, nil, err
		}
		spec = newFactorSpec(p, lr.basis.U, red, lr.slots, false, false)
		if _, err := blockSpecOf(spec); err != nil {
			return nil, nil, err
		}
	}
	records := func(cal bool, pts []point, labels bool) ([]table.PointRecord, error) {
		if len(pts) == 0 {
			return nil, nil // a fit (Fit) evaluates no test points
		}
		d := p.eval
		if cal {
			d = p.cal
		}
		out := make([]table.PointRecord, len(pts))
		// The points of each (sequence, forecast).
		type key struct {
			seq int
			f   forecast
		}
		at := make(map[key]int, len(pts))
		for i, pt := range pts {
			at[key{pt.seq, pt.f}] = i
		}
		gs, err := p.makeGroups(d, cmp.Or(lr.batch, streamBatch))
		if err != nil {
			return nil, err
		}
		// Per chunk (a batch of gs), its points and their indices in pts.
		chunks := make([]*table.PointChunk, len(gs))
		idx := make([][]int, len(gs))
		for c, gr := range gs {
			ch := &table.PointChunk{Cal: cal, Seqs: gr.seqs}
			for b, i := range gr.seqs {
				for k, fc := range p.io.Forecasts(gr.T) {
					j, ok := at[key{i, fc}]
					if !ok {
						continue
					}
					sl, ok := lr.slots[fc]
					if !ok {
						sl = -1
					}
					pt := pts[j]
					cp := table.ChunkPoint{Seq: b, Forecast: k, F: pt.pred, Slot: sl, Skip: skip(pt)}
					if labels && pt.has {
						cp.Y, cp.Labelled = pt.y, true
					}
					ch.Points = append(ch.Points, cp)
					idx[c] = append(idx[c], j)
				}
			}
			chunks[c] = ch
		}
		gather := func(c int, recs []table.PointRecord) error {
			if len(recs) != len(idx[c]) {
				return fmt.Errorf("audit: a point chunk's output of %d records, want %d", len(recs), len(idx[c]))
			}
			for a, j := range idx[c] {
				out[j] = recs[a]
			}
			mu.Lock()
			done += len(idx[c])
			p.opt.progress("test points", done, total)
			mu.Unlock()
			return nil
		}
		if e := exec; e != nil {
			encs := make([]encoder, len(chunks))
			for c, ch := range chunks {
				encs[c] = ch
			}
			err = table.Execute(ctx, e, table.StagePoints, spec, encs, func(c int, b []byte) error {
				recs, err := table.DecodePoints(b)
				if err != nil {
					return err
				}
				return gather(c, recs)
			})
		} else {
			err = newGroupStream(p, gs).run(ctx, false, true, func(c int, _ *group, _, rows [][][]float64) error {
				recs, err := table.MapPointChunk(lr.basis, chunks[c], rows)
				if err != nil {
					return err
				}
				return gather(c, recs)
			})
		}
		return out, err
	}
	if test, err = records(false, ev.test, true); err != nil {
		return nil, nil, err
	}
	if p.cal != nil {
		skip = func(point) int { return -1 }
		if cal, err = records(true, ev.cal, false); err != nil {
			return nil, nil, err
		}
	}
	return test, cal, nil
}

// tableRep is the influence representation of the LowRank solver: the
// block table (every block's step in the factor's coordinates and own
// residuals by forecast slot) and the evaluation points' records, test
// and calibration. Its limits are table.FinalizeLimits over chunks of points,
// so that the prediction at point x of block b's model, F_x + G_x · A_b
// (table.BlockTable.Shifts), is formed for a chunk of points at a time and
// blocks × points never exist at once.
type tableRep struct {
	table     *table.BlockTable
	test, cal []table.PointRecord
	shift     []float64
	// basis and slots map new evaluation points (forPoints): the
	// factor's rows and the forecast slots of the table's residuals.
	basis *table.ShiftBasis
	slots map[forecast]int
}

func (r *tableRep) residuals(context.Context, *problem, func(string)) (*looResiduals, error) {
	return &looResiduals{shift: r.shift}, nil
}

func (r *tableRep) limits(ctx context.Context, p *problem, ev *evaluation, cal bool) (limits, []interval.CalibrationPoint, error) {
	pts, alphas := r.test, calibrationAlphas
	if cal {
		pts, alphas = r.cal, nil
	}
	n := len(pts)
	l := limits{lo: make([]float64, n), up: make([]float64, n), m: make([]int, n)}
	chunk := membudget.FinalizeChunk(r.table.N, p.workers)
	chunks := (n + chunk - 1) / chunk
	counts := make([][]int, chunks)
	labelled := make([]int, chunks)
	gather := func(c int, out table.ChunkLimits) error {
		lo := c * chunk
		hi := min(n, lo+chunk)
		if len(out.Lo) != hi-lo || len(out.Up) != hi-lo || len(out.M) != hi-lo || len(out.Covered) != len(alphas) {
			return fmt.Errorf("audit: a finalize chunk's output of %d limits and %d counts, want %d and %d", len(out.Lo), len(out.Covered), hi-lo, len(alphas))
		}
		copy(l.lo[lo:hi], out.Lo)
		copy(l.up[lo:hi], out.Up)
		copy(l.m[lo:hi], out.M)
		counts[c], labelled[c] = out.Covered, out.Labelled
		return nil
	}
	spec := &table.TableSpec{Alpha: p.opt.Alpha, Alphas: alphas, Table: *r.table}
	var err error
	if e := p.opt.Executor; e != nil {
		encs := make([]encoder, chunks)
		for c := range encs {
			encs[c] = &table.FinalizeChunk{Points: pts[c*chunk : min(n, (c+1)*chunk)]}
		}
		err = table.Execute(ctx, e, table.StageFinalize, spec, encs, func(c int, b []byte) error {
			var out table.ChunkLimits
			if err := out.UnmarshalBinary(b); err != nil {
				return err
			}
			return gather(c, out)
		})
	} else {
		err = par.For(ctx, chunks, p.workers, func(_, c int) error {
			out, err := spec.Finalize(&table.FinalizeChunk{Points: pts[c*chunk : min(n, (c+1)*chunk)]})
			if err != nil {
				return err
			}
			return gather(c, out)
		})
	}
	if err != nil {
		return limits{}, nil, err
	}
	if cal {
		return l, nil, nil
	}
	total := 0
	for _, v := range labelled {
		total += v
	}
	return l, curveOf(counts, total), nil
}

var _ influenceRep = (*tableRep)(nil)
