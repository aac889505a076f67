// Package solvecost predicts the time and memory of an audit with each of
// the solvers that apply the inverse curvature exactly or nearly so
// (exact, dual and low-rank) from the sizes of the model and the data, and
// chooses among them: the automatic solver of the audit
// (audit.Solver Auto) asks it whether the solver its size rule names is
// one that the prediction says is much slower than another. The choice is
// a pure function of the sizes (nothing is timed at run time), so that an
// audit repeated on the same files takes the same path.
//
// The prediction counts the work of each path in units of one time step
// of one sequence through a model of P parameters, and in flops for the
// dense linear algebra; the seconds per unit are CPU seconds measured on
// the bundled examples, the quickstart's GRU and a windowed LSTM of 3,991
// parameters (benchmarks/solver, whose RESULTS.md gives the load), and a
// gonum benchmark of the factorisations; the constants' comments give
// the figures. What each path does:
//
//   - exact: P curvature columns, each a tangent and a second-order pass
//     over the training steps; the P×P eigendecomposition and inverse; the
//     leverage of every loss term's Jacobian row; one forward pass over
//     the evaluated steps per block (the leave-one-out predictions); the
//     damping check repeats the leverage and the forward passes twice
//     when P is at most the check's limit.
//   - dual: the N×P Jacobian of the loss terms (one per-example pass);
//     its N×N kernel, its eigenvalues and Cholesky factor; the leverage
//     solves; the same forward passes per block as exact; the damping
//     check when N is at most the limit.
//   - low-rank: about 1.5k curvature products over at most a few thousand
//     sequences (k the rank), a streamed pass over the training and the
//     evaluated steps, and linearised leave-one-out predictions in the
//     rank-k space (no forward pass per block); no damping check.
//
// Not predicted: the low-rank path's conjugate-gradient refinement of
// blocks of high leverage, which depends on the leverage, not on the
// sizes (it took 3.6 of 4.7 CPU seconds on examples/synthetic and never
// ran on the quickstart's GRU, problems of like sizes). Its budget is
// known, though, so Choose gives the low-rank path that replaces the exact
// one a slack, and the audit returns to the exact path (Retreat) when the
// low-rank path's probes call for per-block Newton steps and the budget's
// predicted cost exceeds the slack.
package solvecost

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// Solver names a solver the prediction covers.
type Solver string

// The solvers predicted.
const (
	Exact   Solver = "exact"
	Dual    Solver = "dual"
	LowRank Solver = "lowrank"
)

// Shape is what the prediction reads: the sizes of the model and the data.
type Shape struct {
	Params     int // P, the parameters differentiated
	Terms      int // N, the training loss terms
	Blocks     int // B, the leave-out blocks
	TrainSteps int // time steps of the training sequences, summed
	EvalSteps  int // time steps of the evaluated and calibration sequences, summed
	TrainSeqs  int // training sequences
	EvalSeqs   int // evaluated and calibration sequences
	// CurvatureSteps are the training steps the low-rank curvature is
	// built from (a subsample when there are many sequences).
	CurvatureSteps int
	Rank           int // k of the low-rank path
	// CheckMaxDim is the largest factorisation (P for exact, N for
	// dual) at which the damping check re-runs the solves and the
	// leave-one-out predictions twice; 0 when the check is off.
	// CheckSeqs is the most evaluated sequences it re-runs (a sample).
	CheckMaxDim, CheckSeqs int
}

// ShapeOf is the shape of an audit of a model of P parameters with N
// training loss terms and B blocks on train, evaluating eval and cal (nil
// when there is none), the low-rank path of rank k building its curvature
// from at most maxSeqs training sequences.
func ShapeOf(P, N, B, k, maxSeqs int, train, eval, cal *blocks.Dataset) Shape {
	steps := func(d *blocks.Dataset) (n, seqs int) {
		if d == nil {
			return 0, 0
		}
		for _, s := range d.Seqs {
			n += s.Len()
		}
		return n, d.Len()
	}
	s := Shape{Params: P, Terms: N, Blocks: B, Rank: k}
	s.TrainSteps, s.TrainSeqs = steps(train)
	s.CurvatureSteps = s.TrainSteps * min(maxSeqs, s.TrainSeqs) / max(1, s.TrainSeqs)
	e, es := steps(eval)
	c, cs := steps(cal)
	s.EvalSteps, s.EvalSeqs = e+c, es+cs
	return s
}

// Eligible lists the solvers Choose may take: exact always, dual and
// low-rank when they apply.
func Eligible(dual, lowRank bool) []Solver {
	out := []Solver{Exact}
	if dual {
		out = append(out, Dual)
	}
	if lowRank {
		out = append(out, LowRank)
	}
	return out
}

// Estimate is the predicted cost of one solver.
type Estimate struct {
	Solver  Solver
	Seconds float64
	Bytes   float64 // the largest arrays the path holds
}

// Calibrated constants: CPU seconds per unit of work, measured with
// benchmarks/solver (the phase timings of --timings on the bundled
// examples, the quickstart's GRU and the windowed LSTM, every solver of a
// case run one after another in one session) and a gonum benchmark of
// the dense factorisations, on the 2-core development machine under a
// load average of 14 to 23. CPU seconds, not wall: other jobs inflate a
// wall time several times over and unevenly, while the work done stays
// nearly the same, and the choice reads only the ratios between the
// paths. The seconds per unit of the model's passes depend on the
// architecture (a GRU of 8 units in batches of 23 sequences costs about
// 20 times a 20-unit RNN in batches of 100 per step and parameter): each
// constant is the geometric mean over the models measured, and a
// prediction is good to a factor of about 3 either way; since the paths
// compared run the same model, much of that cancels in their ratio.
const (
	// secColumn is one column of the exact path's dense curvature per
	// time step and parameter (a tangent and a second-order pass, the
	// batch's forward and backward passes shared by a block of
	// columns): 1.0e-10 (RNN of 481 parameters), 2.4e-9 (GRU of 297),
	// 3.0e-10 (RNN of 393, 39 sequences).
	secColumn = 3.5e-10
	// secProduct is one curvature-vector product over the training
	// steps (the low-rank factor's Lanczos vectors, the refinement's
	// conjugate gradients, and the dual form's pass for the Jacobian),
	// per time step and parameter: 6.1e-10, 3.9e-9, 3.8e-9 and 8.8e-10
	// (LSTM of 3,991 parameters, 24-step windows).
	secProduct = 1.0e-9
	// secForward is one forward pass per time step and parameter (the
	// leave-one-out predictions of the exact and dual paths): 1.3e-10
	// (RNN), 1.2e-9 (GRU), about 3e-10 (LSTM).
	secForward = 3.0e-10
	// secFlop is one flop of the dense linear algebra: a symmetric
	// eigendecomposition of order 400 with its vectors took 0.16 CPU
	// seconds (2.5e-9 n³, 9 n³ flops).
	secFlop = 2.8e-10
	// eigenFlops is the flops of the exact path's eigendecomposition
	// and inverse over P³; valueFlops those of the dual path's
	// eigenvalues and Cholesky factor over N³ (measured at N = 800:
	// 0.35 and 0.04 CPU seconds).
	eigenFlops = 11
	valueFlops = 2.7
	// lowRankProducts is the curvature products of the low-rank factor,
	// over its rank (the Lanczos vectors, the trace samples and the
	// inverse probes): 1.5 from the 302 products of rank 200.
	lowRankProducts = 1.5
)

// Predict returns the predicted cost of the exact, dual and low-rank
// solvers on s, in that order: CPU seconds (Estimate.Seconds) and bytes.
// The low-rank path's prediction leaves out the conjugate-gradient
// refinement of blocks of high leverage, which only the leverage the
// path computes decides (Choose says how the audit deals with it).
func Predict(s Shape) []Estimate {
	P, N, B := float64(s.Params), float64(s.Terms), float64(s.Blocks)
	S, M := float64(s.TrainSteps), float64(s.EvalSteps)
	loo := secForward * B * M * P // one forward pass over the evaluated steps per block
	// after is the work after the factorisation: the Newton step's
	// leverage solves and the leave-one-out predictions, once, and twice
	// more for the damping check (its predictions on at most CheckSeqs
	// evaluated sequences).
	after := func(dim int, solve float64) float64 {
		if s.CheckMaxDim <= 0 || dim > s.CheckMaxDim {
			return loo + solve
		}
		share := 1.0
		if s.CheckSeqs > 0 && s.EvalSeqs > s.CheckSeqs {
			share = float64(s.CheckSeqs) / float64(s.EvalSeqs)
		}
		return loo*(1+2*share) + 3*solve
	}
	// exact: P columns, the eigendecomposition and inverse, and the
	// leverage of every loss term's Jacobian row (N P² flops).
	exact := secColumn*P*S*P + secFlop*eigenFlops*P*P*P + after(s.Params, secFlop*N*P*P)
	// dual: the Jacobian (one pass), the kernel (N² P flops), its
	// eigenvalues and factor, and the leverage solves (N³ flops).
	dual := secProduct*S*P + secFlop*(N*N*P+valueFlops*N*N*N) + after(s.Terms, secFlop*N*N*N)
	k := float64(s.Rank)
	C := float64(s.CurvatureSteps)
	if C <= 0 || C > S {
		C = S
	}
	n := float64(s.TrainSeqs + s.EvalSeqs)
	low := secProduct*lowRankProducts*k*C*P + secProduct*(S+M)*P + secFlop*2*n*k*P + secFlop*2*B*M*k
	return []Estimate{
		{Solver: Exact, Seconds: exact, Bytes: 8 * 3 * P * P},
		{Solver: Dual, Seconds: dual, Bytes: 8 * (N*P + 2*N*N)},
		{Solver: LowRank, Seconds: low, Bytes: 8 * (k*P + B*k + M*k)},
	}
}

// Rank is the low-rank solver's rank k: opt when positive, else
// clamp(P/4, 40, 200), at most P. The size rule of the automatic solver
// takes the low-rank path only above 3,000 parameters, where this is 200; the floor P/4 matters for
// smaller models audited with Solver LowRank: on examples/synthetic (481
// parameters) rank 40 (P/12) left the coverage 1.3 points above the
// exact solver's, rank 120 0.5 points.
func Rank(P, opt int) int {
	if opt > 0 {
		return min(opt, P)
	}
	return min(P, max(40, min(200, P/4)))
}

// Policy of Choose.
const (
	// Margin is how many times faster another solver must be predicted
	// to replace the size rule's: the tolerance the project sets the
	// automatic choice (within 1.5 times the fastest).
	Margin = 1.5
	// MinSaving is the least predicted saving, in CPU seconds, for which
	// another solver replaces the size rule's: below it the process's
	// own start and reading weigh as much as the solve, the measured
	// difference is noise, and the rule's solver (exact, the reference
	// the low-rank path approximates) keeps small audits reproducible.
	// examples/chickweight (predicted exact 0.26 s, low-rank 0.03 s)
	// keeps exact; the quickstart's GRU (0.98 s and 0.25 s) does not.
	MinSaving = 0.5
	// StateAbove is the rule's predicted CPU seconds from which the
	// prediction is stated even when the rule's solver is kept.
	StateAbove = 10.0
	// MaxBytes is the memory above which a solver is not chosen.
	MaxBytes = 4 << 30
)

// Choice is what Choose decides.
type Choice struct {
	Solver  Solver
	Changed bool // Solver differs from the size rule's
	// Say states the predictions and the choice; empty when the
	// rule's solver is kept and predicted under StateAbove.
	Say string
	// Slack is, when the low-rank path replaces the exact one, the most
	// CPU seconds that the refinement of blocks of high leverage (not
	// predicted) may take with the low-rank path still within Margin of
	// the exact one: Margin times the exact path's prediction less the
	// low-rank path's (Retreat). Zero otherwise.
	Slack float64
}

// Choose returns the solver to use among the eligible ones (the size
// rule's choice rule first among them; rule need not be predicted, e.g.
// conjugate gradients, and is then kept): another replaces rule when it
// is predicted Margin times faster and at least MinSaving seconds
// faster, or when rule's memory exceeds MaxBytes.
func Choose(s Shape, rule Solver, eligible []Solver) Choice {
	all := Predict(s)
	var cands []Estimate
	var ruleEst *Estimate
	for i := range all {
		e := all[i]
		if !slices.Contains(eligible, e.Solver) {
			continue
		}
		if e.Solver == rule {
			ruleEst = &all[i]
		}
		if e.Bytes <= MaxBytes || e.Solver == rule {
			cands = append(cands, e)
		}
	}
	if ruleEst == nil || len(cands) == 0 {
		return Choice{Solver: rule}
	}
	// best is the fastest candidate; when rule's memory exceeds
	// MaxBytes, the fastest of the others.
	best := *ruleEst
	for _, e := range cands {
		if e.Seconds < best.Seconds || best.Bytes > MaxBytes && e.Bytes <= MaxBytes {
			best = e
		}
	}
	c := Choice{Solver: rule}
	if best.Solver != rule && (ruleEst.Bytes > MaxBytes ||
		best.Seconds*Margin < ruleEst.Seconds && ruleEst.Seconds-best.Seconds >= MinSaving) {
		c.Solver, c.Changed = best.Solver, true
		if rule == Exact && best.Solver == LowRank {
			c.Slack = Margin*ruleEst.Seconds - best.Seconds
		}
	}
	if c.Changed || ruleEst.Seconds >= StateAbove {
		c.Say = Sentence(cands, c.Solver)
	}
	return c
}

// Refinement is the predicted CPU seconds of the given number of
// curvature products over the low-rank path's curvature steps: what the
// refinement of blocks of high leverage costs at its budget.
func Refinement(s Shape, products int) float64 {
	C := float64(s.CurvatureSteps)
	if C <= 0 || C > float64(s.TrainSteps) {
		C = float64(s.TrainSteps)
	}
	return secProduct * float64(products) * C * float64(s.Params)
}

// Retreat says whether an audit that Choose moved from the exact path to
// the low-rank one (slack > 0, Choice.Slack) returns to the exact path
// now that the low-rank path's leverage rule is known: when the blocks'
// Newton steps come from their Jacobian rows (perBlock), blocks of high
// leverage are refined by conjugate gradients, up to a budget of
// products (RefineBudget) whose predicted cost refine (Refinement) may
// exceed the slack. How much of the budget is spent only the blocks'
// leverage tells: on examples/synthetic the refinement took 3.6 of the
// low-rank path's 4.7 CPU seconds (the exact path: 2.8), on gru300 of
// benchmarks/influence 148 products of a budget of 2,775. It returns ""
// when the audit stays, else the sentence to add to the prediction, as
// the error that tells the audit to run the exact path instead.
func Retreat(slack, refine float64, perBlock bool, leverage float64) Retreated {
	if slack <= 0 || !perBlock || refine <= slack {
		return ""
	}
	return Retreated(fmt.Sprintf("; then the low-rank path's probes found a mean own leverage of %.3g: refining its blocks of high leverage could take up to %s more, so exact was used",
		leverage, Duration(refine)))
}

// Retreated is Retreat's sentence, an error so that the low-rank path
// can hand it to the audit, which then runs the exact path.
type Retreated string

func (r Retreated) Error() string { return "the exact solver instead" + string(r) }

// The low-rank path's refinement budget (RefineBudget).
const (
	refineFactor = 0.25
	refineWork   = 1e9
)

// RefineBudget is the low-rank path's budget of curvature-vector
// products for refining blocks of high leverage, given the factor's
// products, the curvature's training sequences and P: the larger of
// refineFactor times the factor's products (a quarter of the curvature
// phase's time) and refineWork / (sequences × P) (a fixed amount of work,
// products costing about sequences × P: some 10 s on 2 cores, which
// refines every suspicious block of a model of a few hundred sequences
// and parameters). The blocks are refined in decreasing order of their
// low-rank leverage; a block is begun only when the products so far plus
// its right-hand sides times the mean products per right-hand side so far
// fit.
func RefineBudget(factor, seqs, P int) int {
	return max(int(refineFactor*float64(factor)), int(refineWork/float64(max(1, seqs)*max(1, P))))
}

// Sentence states the predictions of ests and the choice, e.g.
// "predicted CPU time (memory): exact 41 min (0.38 GB), dual 11 min
// (0.09 GB), lowrank 2 min (0.02 GB); lowrank chosen".
func Sentence(ests []Estimate, choice Solver) string {
	parts := make([]string, len(ests))
	for i, e := range ests {
		parts[i] = fmt.Sprintf("%s %s (%s)", e.Solver, Duration(e.Seconds), bytesText(e.Bytes))
	}
	say := fmt.Sprintf("predicted CPU time (memory): %s; %s chosen", strings.Join(parts, ", "), choice)
	if choice == LowRank {
		say += " (the refinement of blocks of high leverage, if any, not included)"
	}
	return say
}

// Duration renders a predicted time in seconds coarsely: "under 0.1 s",
// "0.4 s", "40 s", "12 min", "2.5 h".
func Duration(sec float64) string {
	switch {
	case sec < 0.1:
		return "under 0.1 s"
	case sec < 9.95: // "10.0 s" would be one decimal too many
		return fmt.Sprintf("%.1f s", sec)
	case sec < 100:
		return fmt.Sprintf("%.0f s", sec)
	case sec < 6000:
		return fmt.Sprintf("%.0f min", sec/60)
	default:
		return fmt.Sprintf("%.1f h", sec/3600)
	}
}

func bytesText(b float64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.0f MB", math.Ceil(b/(1<<20)))
	}
	return fmt.Sprintf("%.1f GB", b/(1<<30))
}
