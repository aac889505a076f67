package audit

import (
	"context"
	"fmt"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/errs"
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
	sg, err := newSeqGrads(p, false)
	if err != nil {
		return nil, err
	}
	grads, err := blockGradients(ctx, p, sg)
	if err != nil {
		return nil, err
	}
	mark("curvature and solve")
	return estimateWith(ctx, p, s.method, grads, sg, mark)
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

// SolverList words the names of Solvers for a message: "auto, exact,
// dual, lowrank, cg or lissa".
func SolverList() string {
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
	return nil, fmt.Errorf("audit: unknown solver %q (%s)", name, SolverList())
}

// errNoRetrain is Run's error when exact re-training is asked of a solver
// that keeps no steps in parameter space.
func errNoRetrain() error {
	return errs.Fix([]Option{OptSolver, OptRetrain}, "audit: exact re-training compares per-block parameter steps, which the low-rank solver does not keep: choose the exact, dual or cg solver, or no re-training")
}
