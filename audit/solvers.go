package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// solver is one way of running the influence phase: what Options.Solver
// names. Each returns the estimated leave-one-block-out models in the
// representation it keeps them in (influence.rep); the phases after it
// are the same for every solver. Adding a solver is a type here (or its
// own file) and a row in solverTable.
type solver interface {
	// influence runs the influence phase on p for the evaluation points
	// ev, calling mark as its sub-phases begin.
	influence(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*influence, error)
	// retrains says whether exact re-training (Options.Retrain) can be
	// compared with its estimates: it needs the steps in parameter space.
	retrains() bool
}

// denseSolver estimates every block's step in parameter space from one
// hvp.Factorize of the damped curvature by method (the exact, dual, CG
// and LiSSA solvers): the block gradients, then estimate.
type denseSolver struct{ method hvp.Method }

func (s denseSolver) retrains() bool { return true }

func (s denseSolver) influence(ctx context.Context, p *problem, _ *evaluation, mark func(string)) (*influence, error) {
	mark("block gradients")
	var tp *trainingPass
	if s.method == hvp.Exact {
		// The exact solver's curvature runs batches of its own: the
		// training batches' passes run first, so that their buffers are
		// free again for the block gradients'.
		var err error
		if tp, err = trainingPasses(ctx, p); err != nil {
			return nil, err
		}
		tp.whole = nil
	}
	sg, err := newSeqGrads(p, false)
	if err != nil {
		return nil, err
	}
	grads, err := blockGradients(ctx, p, sg)
	if err != nil {
		return nil, err
	}
	if p.opt.Estimator != Newton {
		// Only the Newton correction takes gradients again: the
		// curvature need not share the heap with these buffers.
		sg.release()
	}
	mark("curvature and solve")
	return estimateWith(ctx, p, s.method, tp, grads, sg, mark)
}

// lowRankSolver is the streaming path (scalable.go): a low-rank factor
// of the Gauss-Newton matrix, every block's step kept as k coordinates
// in its basis.
type lowRankSolver struct{}

func (lowRankSolver) retrains() bool { return false }

func (lowRankSolver) influence(ctx context.Context, p *problem, ev *evaluation, mark func(string)) (*influence, error) {
	return lowRankInfluence(ctx, p, ev, mark)
}

// namedSolver is one row of the solver table.
type namedSolver struct {
	name Solver
	s    solver
}

// solverTable lists the solvers Options.Solver names, in the order a
// command offers them: adding a solver is a row here and its type.
func solverTable() []namedSolver {
	return []namedSolver{
		{Exact, denseSolver{hvp.Exact}},
		{Dual, denseSolver{hvp.Dual}},
		{LowRank, lowRankSolver{}},
		{CG, denseSolver{hvp.CG}},
		{LiSSA, denseSolver{hvp.LiSSA}},
	}
}

// Solvers returns the names Options.Solver takes, Auto first: what a
// command's solver flag offers.
func Solvers() []Solver {
	out := []Solver{Auto}
	for _, r := range solverTable() {
		out = append(out, r.name)
	}
	return out
}

// solverList words the names of Solvers for a message: "auto, exact,
// dual, lowrank, cg or lissa".
func solverList() string {
	var names []string
	for _, n := range Solvers() {
		names = append(names, string(n))
	}
	return joinWords(names, "or")
}

// joinWords joins words as a sentence lists them: "a, b and c" (conj
// "and").
func joinWords(words []string, conj string) string {
	out := ""
	for i, w := range words {
		switch {
		case i == 0:
		case i == len(words)-1:
			out += " " + conj + " "
		default:
			out += ", "
		}
		out += w
	}
	return out
}

// solverFor returns the solver named (not Auto: see problem.solverName).
func solverFor(name Solver) (solver, error) {
	for _, r := range solverTable() {
		if r.name == name {
			return r.s, nil
		}
	}
	return nil, fmt.Errorf("audit: unknown solver %q (%s)", name, solverList())
}

// errNoRetrain is Run's error when exact re-training is asked of a solver
// that keeps no steps in parameter space.
func errNoRetrain() error {
	return errs.Fix([]Option{OptSolver, OptRetrain}, "audit: exact re-training compares per-block parameter steps, which the low-rank solver does not keep: choose the exact, dual or cg solver, or no re-training")
}

// chunkSize is the most sequences per batch for per-sequence gradients:
// enough batches to keep every core busy, each small enough to stay in
// cache.
const chunkSize = 256

// seqGrads computes per-training-sequence gradients: from batched passes
// over chunks of at most chunkSize sequences split by sequence
// (hvp.Objective.PerExampleGradients), or, for a model whose batch entries
// do not separate, from one backward pass per sequence. It keeps its
// objectives (their example analyses and evaluation buffers) and which
// path works across calls; the block-gradient and influence phases share
// one.
type seqGrads struct {
	p        *problem
	chunks   []*group // nil on the one-pass-per-sequence path
	chunkObj *hvp.Objective
	partObj  *hvp.Objective
	// separate: one pass per sequence (the batch entries do not separate,
	// found on the first call, or a test asks for it).
	separate bool
}

// newSeqGrads prepares per-sequence gradients of p's training sequences;
// separate asks for one pass per sequence from the start.
func newSeqGrads(p *problem, separate bool) (*seqGrads, error) {
	s := &seqGrads{p: p, separate: separate}
	if !separate {
		var err error
		if s.chunks, err = p.makeGroups(p.train, chunkSize); err != nil {
			return nil, err
		}
		s.chunkObj = s.chunkObjective()
	}
	return s, nil
}

// chunkObjective is the objective over the chunks, with their example
// axes.
func (s *seqGrads) chunkObjective() *hvp.Objective {
	o := s.p.objective(s.chunks)
	for c := range s.chunks {
		o.Batches[c].ExampleAxes = s.p.io.ExampleAxes()
	}
	return o
}

// release drops the evaluation buffers the objectives keep, so that the
// phases after the block gradients do not hold them; a later call of grads
// makes them again.
func (s *seqGrads) release() {
	if s.chunkObj != nil {
		s.chunkObj = s.chunkObjective()
	}
	s.partObj = nil
}

// rows returns, for every training sequence, the gradient of its loss
// terms whose target row is in [lo, hi).
func (s *seqGrads) rows(ctx context.Context, lo, hi int) ([][]float64, error) {
	return s.grads(ctx, func(gr *group) []float64 { return s.p.maskRows(gr, lo, hi) }, false)
}

// grads returns, for every training sequence, the gradient of its loss
// terms that mask keeps (mask gives a group's weights), or with outputs
// set the gradient of the kept outputs' weighted sum (hvp.Job.Outputs):
// rows of the output Jacobian when mask keeps one term per sequence.
func (s *seqGrads) grads(ctx context.Context, mask func(gr *group) []float64, outputs bool) ([][]float64, error) {
	p := s.p
	n := p.train.Len()
	out := make([][]float64, n)
	if !s.separate {
		jobs := make([]hvp.Job, len(s.chunks))
		res := make([][][]float64, len(s.chunks))
		for c, gr := range s.chunks {
			jobs[c] = hvp.Job{Batch: c, Weight: mask(gr), Outputs: outputs}
			res[c] = make([][]float64, len(gr.seqs))
		}
		err := s.chunkObj.PerExampleGradients(ctx, p.theta, jobs, res, nil)
		if err == nil {
			for c, gr := range s.chunks {
				for b, i := range gr.seqs {
					out[i] = res[c][b]
				}
			}
			return out, nil
		}
		if !errors.Is(err, graph.ErrNotSeparable) {
			return nil, err
		}
		s.separate = true
	}
	if s.partObj == nil {
		s.partObj = p.objective(p.parts)
	}
	jobs := make([]hvp.Job, len(p.parts))
	idx := make([]int, len(p.parts))
	for pi, gr := range p.parts {
		jobs[pi] = hvp.Job{Batch: pi, Weight: mask(gr), Outputs: outputs}
		idx[pi] = gr.seqs[0]
	}
	res := make([][]float64, len(jobs))
	if err := s.partObj.Gradients(ctx, p.theta, jobs, res, nil); err != nil {
		return nil, err
	}
	for pi, i := range idx {
		out[i] = res[pi]
	}
	return out, nil
}

// blockGradients is the block-gradient phase: grad L_b for every block of
// p's scheme (docs/design.md, section 2.2), from per-sequence gradients, and
// for interval and nested schemes from per (sequence, interval) cell
// gradients combined by addition.
func blockGradients(ctx context.Context, p *problem, sg *seqGrads) ([][]float64, error) {
	bl := p.scheme.Blocks
	out := make([][]float64, len(bl))
	if p.scheme.Kind == blocks.Sequences {
		seq, err := sg.rows(ctx, 0, math.MaxInt)
		if err != nil {
			return nil, err
		}
		for k, b := range bl {
			out[k] = seq[b.Seq]
		}
		return out, nil
	}
	// cells[j][i]: the gradient of sequence i's terms in interval j.
	P := len(p.theta)
	n := p.train.Len()
	var cells [][][]float64
	for _, b := range bl {
		if b.Interval < 0 {
			continue
		}
		for len(cells) <= b.Interval {
			cells = append(cells, nil)
		}
		if cells[b.Interval] == nil {
			c, err := sg.rows(ctx, b.Lo, b.Hi)
			if err != nil {
				return nil, err
			}
			cells[b.Interval] = c
		}
	}
	seqGrad := func(i int) []float64 {
		s := make([]float64, P)
		for _, c := range cells {
			if c != nil {
				num.AddScaled(s, 1, c[i])
			}
		}
		return s
	}
	intGrad := make([][]float64, len(cells))
	for j, c := range cells {
		intGrad[j] = make([]float64, P)
		for i := 0; i < n && c != nil; i++ {
			num.AddScaled(intGrad[j], 1, c[i])
		}
	}
	for k, b := range bl {
		switch b.Kind {
		case blocks.Intervals:
			out[k] = slices.Clone(intGrad[b.Interval])
		case blocks.Nested:
			g := seqGrad(b.Seq)
			num.AddScaled(g, 1, intGrad[b.Interval])
			num.AddScaled(g, -1, cells[b.Interval][b.Seq])
			out[k] = g
		default:
			out[k] = seqGrad(b.Seq)
		}
	}
	return out, nil
}
