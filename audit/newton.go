package audit

import (
	"context"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/audit/krylov"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// newtonMaxFloats bounds the memory of the Newton estimator's output
// Jacobians (J and (C + lambda I)^-1 J^T, 8 bytes a float): 2 GB.
const newtonMaxFloats = 1 << 28

// ownTerm is one loss term of a training sequence: forecast, target,
// output at theta_hat, weight.
type ownTerm struct {
	seq     int // the training sequence
	f       forecast
	y, fx   float64
	w       float64
	forcast int // index of the forecast in forecasts(T) of its sequence
}

// ownBlock is the Newton estimator's result for one block: its own terms'
// (those of its evaluation region) leave-out residuals |y - f - J_b
// delta_b| (linearised) or +Inf, and the linearised prediction changes
// |J_b delta_b|.
type ownBlock struct {
	terms []ownTerm
	res   []float64
	shift []float64
}

// ownTerms lists, per training sequence, its loss terms with the model's
// outputs at theta_hat.
func (p *problem) ownTerms() ([][]ownTerm, error) {
	out := make([][]ownTerm, p.train.Len())
	// One array of every term, counted first: appending per sequence left
	// a third of the capacity unused (0.97 GB at a million sequences).
	count := 0
	for _, gr := range p.groups {
		for _, w := range gr.weight {
			if w != 0 {
				count++
			}
		}
	}
	flat := make([]ownTerm, 0, count)
	for _, gr := range p.groups {
		outs, err := gr.prog.NewState().Forward(p.theta, gr.in)
		if err != nil {
			return nil, err
		}
		B := len(gr.seqs)
		for b, i := range gr.seqs {
			start := len(flat)
			for k, f := range p.io.Forecasts(gr.T) {
				q := p.io.Index(B, gr.T, b, f.T, f.H)
				if gr.weight[q] != 0 {
					flat = append(flat, ownTerm{seq: i, f: f, y: gr.target[q], fx: outs[0].F[q], w: gr.weight[q], forcast: k})
				}
			}
			if len(flat) > start {
				out[i] = flat[start:len(flat):len(flat)]
			}
		}
	}
	return out, nil
}

// jacobianRows returns, per training sequence, the rows d f_e / d theta
// of its loss terms (in the order of terms): one batched pass per
// forecast position, every sequence's term at that position seeded with 1
// (hvp.Job.Outputs), through the per-sequence gradients sg.
func jacobianRows(ctx context.Context, p *problem, sg *seqGrads, terms [][]ownTerm) ([][][]float64, error) {
	maxF := 0
	for _, gr := range p.groups {
		maxF = max(maxF, len(p.io.Forecasts(gr.T)))
	}
	rows := make([][][]float64, len(terms))
	for i, ts := range terms {
		rows[i] = make([][]float64, len(ts))
	}
	// pos[i][k]: the index in terms[i] of forecast position k, or -1.
	pos := make([][]int, len(terms))
	for i, ts := range terms {
		pos[i] = make([]int, maxF)
		for k := range pos[i] {
			pos[i][k] = -1
		}
		for j, t := range ts {
			pos[i][t.forcast] = j
		}
	}
	for k := 0; k < maxF; k++ {
		mask := func(gr *group) []float64 {
			w := make([]float64, len(gr.weight))
			fs := p.io.Forecasts(gr.T)
			if k >= len(fs) {
				return w
			}
			B := len(gr.seqs)
			for b := range gr.seqs {
				q := p.io.Index(B, gr.T, b, fs[k].T, fs[k].H)
				if gr.weight[q] != 0 {
					w[q] = 1
				}
			}
			return w
		}
		g, err := sg.grads(ctx, mask, true)
		if err != nil {
			return nil, err
		}
		for i := range terms {
			if j := pos[i][k]; j >= 0 {
				rows[i][j] = g[i]
			}
		}
		p.opt.progress("output Jacobians", k+1, maxF)
	}
	return rows, nil
}

// newtonMaxBlockTerms is the most loss terms of a block for which the
// Newton step forms and eigendecomposes its m × m leverage matrix
// (newtonReduced): exact, and under a second a block at 400 terms, but
// cubic in m and not interruptible (1,000 terms 12 s a block on a
// 2-parameter linear model, 2,000 terms 38 s). Larger blocks (long
// sequences, interval and nested blocks, whose terms span every sequence)
// take the Lanczos path (newtonKrylov), whose cost is linear in m per
// step.
const newtonMaxBlockTerms = 400

// blockTerms lists, for every block of the scheme, the loss terms it
// deletes (the sequence's, the interval's in every sequence, or their
// union) as indices into flat, the terms of every sequence in sequence
// order, and which of them are in its evaluation region (for sequence
// and interval blocks all; for a nested block those of its sequence in
// its interval). Each term is in the region of at most one block.
func blockTerms(bl []blocks.Block, terms [][]ownTerm) (flat []ownTerm, del [][]int, region [][]bool) {
	first := make([]int, len(terms))
	for i, ts := range terms {
		first[i] = len(flat)
		flat = append(flat, ts...)
	}
	// The terms of each interval, by the interval's index (its target
	// row t+h in [Lo, Hi)).
	byInterval := map[int][]int{}
	for _, b := range bl {
		if b.Interval < 0 {
			continue
		}
		if _, ok := byInterval[b.Interval]; ok {
			continue
		}
		in := []int{}
		for e, t := range flat {
			if r := t.f.T + t.f.H; b.Lo <= r && r < b.Hi {
				in = append(in, e)
			}
		}
		byInterval[b.Interval] = in
	}
	del = make([][]int, len(bl))
	region = make([][]bool, len(bl))
	for k, b := range bl {
		switch b.Kind {
		case blocks.Sequences, blocks.Windows:
			for i := max(b.Seq, b.DelLo); i < max(b.Seq+1, b.DelHi); i++ {
				for a := range terms[i] {
					del[k] = append(del[k], first[i]+a)
					region[k] = append(region[k], b.Kind == blocks.Sequences || b.Lo <= i && i < b.Hi)
				}
			}
		case blocks.Intervals:
			del[k] = byInterval[b.Interval]
			region[k] = make([]bool, len(del[k]))
			for a := range region[k] {
				region[k][a] = true
			}
		case blocks.Nested:
			for a, t := range terms[b.Seq] {
				r := t.f.T + t.f.H
				del[k] = append(del[k], first[b.Seq]+a)
				region[k] = append(region[k], b.Lo <= r && r < b.Hi)
			}
			for _, e := range byInterval[b.Interval] {
				if flat[e].seq != b.Seq {
					del[k] = append(del[k], e)
					region[k] = append(region[k], false)
				}
			}
		}
	}
	return flat, del, region
}

// newtonCorrection turns the infinitesimal steps inf.delta = A g_b (A =
// (C + lambda I)^-1, applied by f) into Newton steps on the leave-block-out
// objective (docs/design.md, section 4.5):
//
//	theta_-b - theta = (C - C_b)^-1 g_b = u + A J^T (Lambda^-1 - J A J^T)^-1 J u,  u = A g_b,
//
// with J = J_b the output Jacobian of the terms block b deletes and
// Lambda = Lambda_b their Gauss-Newton weights (weight times the loss's
// second derivative, from hvp.Loss), an m_b × m_b solve per block. With
// S = Lambda^1/2 J A J^T Lambda^1/2 (the leverage matrix, eigenvalues in
// [0, 1)) the inner inverse is Lambda^1/2 (I - S)^-1 Lambda^1/2. Every
// scheme has it: a sequence block's terms are its sequence's, an interval
// block's those of its interval in every sequence (C_b = sum over them of
// J_e^T Lambda_e J_e, which the Woodbury form takes row by row), a nested
// block's the union of both. Blocks up to newtonMaxBlockTerms terms
// eigendecompose S, larger ones run the Lanczos process on it
// (newtonKrylov). The block's own leave-out residuals, on its evaluation
// region (a nested block's: its sequence within its interval), are those
// of the linearised model, y - f - J delta_b (for squared error (I -
// Lambda J A J^T)^-1 (y - f)), not a forward pass at theta_-b: measured
// against exact warm-started re-fits of 12 blocks of
// examples/synthetic/model_small.onnx, the linearised residuals are the
// closer (RMS difference 0.067 against 0.072 for the forward pass, 0.125
// for the in-sample residuals); on models at a stationary point the
// intervals are the same to 0.004 in coverage either way, and a forward
// pass per block is saved. Interval and nested blocks take their own
// residuals from a forward pass at theta_-b instead, as the test points'
// predictions are: their steps are large (a block deletes an interval of
// every sequence), the linearised model is far from the forward pass
// there, and the residuals must match the centres they are added to. On
// examples/synthetic/model_small.onnx (Adam-trained, stationarity ratio
// 0.31) interval blocks of 3 and 5 steps covered 0.588 and 0.530 of the
// test values with linearised residuals, 0.901 and 0.885 with forward
// ones (infinitesimal estimator: 0.899, 0.894); on a GRU at a stationary
// point the limits' error against exact re-fits is 0.115 against 0.110
// (interval) and 0.138 against 0.115 (nested) of the exact width, forward
// against linearised. A block with a leverage eigenvalue within
// leverageLimit of 1 keeps the infinitesimal step and gets unbounded own
// residuals. It sets inf's delta, own, lev and levMax, its leverage
// diagnostics and warnings, or its estimator and a note when it falls
// back; mark is called as its sub-phases (output Jacobians, leverage)
// begin.
func newtonCorrection(ctx context.Context, p *problem, f hvp.Factor, sg *seqGrads, inf *influence, mark func(string)) error {
	if p.multi != nil {
		inf.estimator = Infinitesimal
		inf.notes = append(inf.notes, "The Newton estimator's leverage correction takes loss terms of one output each; a classifier of K logits takes the infinitesimal jackknife, with residuals from forward passes at theta_-b.")
		return nil
	}
	terms, err := p.ownTerms()
	if err != nil {
		return err
	}
	nt := 0
	for _, ts := range terms {
		nt += len(ts)
	}
	P := len(p.theta)
	if 2*nt*P > newtonMaxFloats {
		inf.estimator = Infinitesimal
		inf.notes = append(inf.notes, fmt.Sprintf("The Newton estimator would need %d output-Jacobian rows of %d parameters (%.1f GB); the infinitesimal jackknife is used instead.", nt, P, float64(2*nt*P)*8/1e9))
		return nil
	}
	mark("output Jacobians")
	J, err := jacobianRows(ctx, p, sg, terms)
	if err != nil {
		return err
	}
	mark("leverage")
	flatJ := make([][]float64, 0, nt)
	for _, rows := range J {
		flatJ = append(flatJ, rows...)
	}
	flatAJ := make([][]float64, nt)
	if err := f.SolveAll(ctx, flatAJ, flatJ); err != nil {
		return err
	}
	bl := p.scheme.Blocks
	flat, del, region := blockTerms(bl, terms)
	// blockRows gives block k's deleted terms, their Jacobian rows J and
	// A J^T.
	blockRows := func(k int) ([]ownTerm, [][]float64, [][]float64) {
		idx := del[k]
		ts := make([]ownTerm, len(idx))
		Jb := make([][]float64, len(idx))
		AJb := make([][]float64, len(idx))
		for a, e := range idx {
			ts[a], Jb[a], AJb[a] = flat[e], flatJ[e], flatAJ[e]
		}
		return ts, Jb, AJb
	}
	loss := p.opt.Loss
	own := make([]*ownBlock, len(bl))
	lev := make([][]float64, len(bl))
	levMax := make([]float64, len(bl))
	unbounded := make([]bool, len(bl))
	approx := make([]bool, len(bl))
	done := 0
	var mu sync.Mutex
	err = par.For(ctx, len(bl), p.workers, func(_, k int) error {
		ts, Jb, AJb := blockRows(k)
		st, err := newtonStep(loss, ts, Jb, AJb, inf.delta[k])
		if err != nil {
			return errs.Wrapf(err, "audit: block %s: ", bl[k].Label)
		}
		ob := &ownBlock{}
		var lk []float64
		for a, in := range region[k] {
			if !in {
				continue
			}
			ob.terms = append(ob.terms, ts[a])
			ob.res = append(ob.res, st.res[a])
			ob.shift = append(ob.shift, st.shift[a])
			if st.lev != nil {
				lk = append(lk, st.lev[a])
			}
		}
		own[k] = ob
		inf.delta[k], lev[k], levMax[k], unbounded[k], approx[k] = st.delta, lk, st.levMax, st.unbounded, st.approx
		mu.Lock()
		done++
		p.opt.progress("leverage", done, len(bl))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	inf.leverageDiagnostics(lev, func(k int) []ownTerm { return own[k].terms }, unbounded, levMax, bl)
	if n := num.Count(approx); n > 0 {
		inf.notes = append(inf.notes, fmt.Sprintf("For %d of %d blocks the Lanczos process of the Newton step (blocks of more than %d loss terms) stopped at its step cap before the step reached relative residual %g and the largest leverage eigenvalue %g: their steps are the last iterates.",
			n, len(bl), newtonMaxBlockTerms, krylov.SolveTol, krylov.EigTol))
	}
	inf.own, inf.lev, inf.levMax = own, lev, levMax
	it, err := newtonIterate(ctx, p, f, inf, unbounded, blockRows)
	if err != nil {
		return err
	}
	if it != nil {
		inf.diag.NewtonIteration = it
		inf.notes = append(inf.notes, it.note())
	}
	for k := range own {
		// Residuals from a forward pass at theta_-b, except for the
		// unbounded blocks: for interval and nested blocks always (see
		// the function's comment), and for every block the iteration
		// moved past its first step.
		iterated := it != nil && it.Steps[k] > 1
		if !unbounded[k] && (iterated || p.opt.ownForward || (p.scheme.Kind != blocks.Sequences && !p.opt.keepLinear)) {
			own[k] = nil
		}
	}
	return nil
}

// blockStep is the Newton correction of one block (newtonStep).
type blockStep struct {
	// delta is theta_-b - theta: the Newton step, or the infinitesimal
	// step u itself when the block is unbounded or has no terms.
	delta []float64
	// res and shift are, per own term, the linearised leave-out residual
	// |y - f - J delta| (+Inf when unbounded) and |J delta|.
	res, shift []float64
	// lev is the diagonal of S (nil when S overflowed), levMax its
	// largest eigenvalue; unbounded says that a leverage eigenvalue came
	// within leverageLimit of 1.
	lev       []float64
	levMax    float64
	unbounded bool
	// approx says that the Lanczos path (newtonKrylov) stopped at its
	// step cap before converging.
	approx bool
}

// newtonStep is the per-block core of the Newton estimator (see
// newtonCorrection) on the exact path (newtonKrylov for blocks of more
// than newtonMaxBlockTerms terms): from the block's terms ts, its output-Jacobian rows
// J (one per term), AJ = A J^T row by row and u = A g_b, with A the
// (approximate) inverse damped curvature, it returns the Newton step, the
// own residuals of the linearised model and the leverage. It fails only
// when the eigendecomposition of the m × m leverage matrix fails.
func newtonStep(loss hvp.Loss, ts []ownTerm, J, AJ [][]float64, u []float64) (blockStep, error) {
	m := len(ts)
	if m == 0 {
		return blockStep{delta: u, res: []float64{}, shift: []float64{}}, nil
	}
	if m > newtonMaxBlockTerms {
		return newtonKrylov(loss, ts, J, AJ, u), nil
	}
	// K = J A J^T (symmetrised), v = J u.
	K := mat.NewSymDense(m, nil)
	v := make([]float64, m)
	for a := 0; a < m; a++ {
		for c := a; c < m; c++ {
			K.SetSym(a, c, (num.Dot(J[a], AJ[c])+num.Dot(J[c], AJ[a]))/2)
		}
		v[a] = num.Dot(J[a], u)
	}
	st, z, err := newtonReduced(loss, ts, K, v)
	st.delta = u
	if z != nil {
		delta := append([]float64(nil), u...)
		for c := 0; c < m; c++ {
			num.AddScaled(delta, z[c], AJ[c])
		}
		st.delta = delta
	}
	return st, err
}

// newtonReduced is newtonStep from the block's m × m matrix K = J A J^T
// and v = J u alone: it returns the step's figures but delta (unset) and
// z, the coefficients of the Newton step delta = u + sum_c z_c A J_c^T
// (nil when the step is u itself: no terms, or unbounded). The low-rank
// path (scalable.go) gets K and v in the factor's coordinates, never
// forming A J^T.
func newtonReduced(loss hvp.Loss, ts []ownTerm, K *mat.SymDense, v []float64) (blockStep, []float64, error) {
	m := len(ts)
	st := blockStep{res: make([]float64, m), shift: make([]float64, m)}
	if m == 0 {
		return st, nil, nil
	}
	sl := make([]float64, m)
	for a, t := range ts {
		sl[a] = math.Sqrt(t.w * loss.SecondDerivative(t.y, t.fx))
	}
	S := mat.NewSymDense(m, nil)
	for a := 0; a < m; a++ {
		for c := a; c < m; c++ {
			S.SetSym(a, c, sl[a]*K.At(a, c)*sl[c])
		}
	}
	st.lev = make([]float64, m)
	for a := range st.lev {
		st.lev[a] = S.At(a, a)
	}
	unbounded := func() (blockStep, []float64, error) {
		st.unbounded = true
		for a := range st.res {
			st.res[a] = math.Inf(1)
		}
		return st, nil, nil
	}
	for a := 0; a < m; a++ {
		for c := a; c < m; c++ {
			if v := S.At(a, c); math.IsNaN(v) || math.IsInf(v, 0) {
				// An indefinite or singular curvature made the leverage
				// overflow: no bounded leave-out fit for this block.
				st.levMax, st.lev = math.Inf(1), nil
				return unbounded()
			}
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(S, true) {
		return st, nil, fmt.Errorf("eigendecomposition of its %d×%d leverage matrix failed", m, m)
	}
	s := eig.Values(nil)
	st.levMax = s[m-1]
	if s[m-1] > 1-leverageLimit || math.IsNaN(s[m-1]) {
		return unbounded()
	}
	var V mat.Dense
	eig.VectorsTo(&V)
	// z = Lambda^1/2 V (I - diag s)^-1 V^T Lambda^1/2 v.
	tmp := make([]float64, m)
	for e := 0; e < m; e++ {
		acc := 0.0
		for a := 0; a < m; a++ {
			acc += V.At(a, e) * sl[a] * v[a]
		}
		tmp[e] = acc / (1 - s[e])
	}
	z := make([]float64, m)
	for a := 0; a < m; a++ {
		acc := 0.0
		for e := 0; e < m; e++ {
			acc += V.At(a, e) * tmp[e]
		}
		z[a] = sl[a] * acc
	}
	// J delta = v + K z; own residuals y - f - J delta.
	for a, t := range ts {
		jd := v[a]
		for c := 0; c < m; c++ {
			jd += K.At(a, c) * z[c]
		}
		st.res[a] = math.Abs(t.y - t.fx - jd)
		st.shift[a] = math.Abs(jd)
	}
	return st, z, nil
}

// leverageDiagnostics sets inf's leverage per step (the mean of lev[k]
// over the blocks' own terms at each row, termsOf(k) giving block k's
// terms), its unbounded blocks, and their warnings: the one place both
// the exact and the low-rank path summarise leverage.
func (inf *influence) leverageDiagnostics(lev [][]float64, termsOf func(k int) []ownTerm, unbounded []bool, levMax []float64, bl []blocks.Block) {
	d := &inf.diag
	// Leverage per step (row), and the blocks left unbounded.
	var sum, cnt []float64
	for k, l := range lev {
		for a, v := range l {
			t := termsOf(k)[a].f.T
			for len(sum) <= t {
				sum, cnt = append(sum, 0), append(cnt, 0)
			}
			sum[t] += v
			cnt[t]++
		}
	}
	d.LeveragePerStep = make([]float64, len(sum))
	for t := range sum {
		d.LeveragePerStep[t] = num.Ratio(sum[t], cnt[t])
	}
	worst := 0.0
	for k, u := range unbounded {
		if u {
			d.UnboundedBlocks++
			d.UnboundedLabels = append(d.UnboundedLabels, bl[k].Label)
			worst = math.Max(worst, levMax[k])
		}
	}
	if d.UnboundedBlocks > 0 {
		inf.warn(Warning{Code: UnboundedBlocks, Step: -1, Figure: worst, Bound: leverageLimit, Count: d.UnboundedBlocks})
	}
	for t, v := range d.LeveragePerStep {
		if v > HighLeverageBound {
			inf.warn(Warning{Code: HighLeverage, Step: t, Figure: v, Bound: HighLeverageBound})
		}
	}
}
