// Package solvecost predicts the time and memory of an audit with each of
// the solvers that apply the inverse curvature exactly or nearly so
// (exact, dual and low-rank) from the sizes of the model and the data, and
// chooses among them: the automatic solver of the audit
// (audit.Solver Auto) asks it whether the solver its size rule names is
// one that the prediction says is much slower than another.
//
// The prediction counts the work of each path in units of one time step
// of one sequence through a model of P parameters (a forward pass costs
// about 2P flops a step, a curvature product about four times that), and
// in flops for the dense linear algebra; the seconds per unit are
// calibrated constants, measured on the bundled examples and on a
// windowed LSTM of 3,991 parameters (benchmarks/solver). What each path
// does:
//
//   - exact: P curvature columns, each a tangent and a second-order pass
//     over the training steps; the P×P eigendecomposition and inverse; one
//     forward pass over the evaluated steps per block (the leave-one-out
//     predictions); the damping check repeats the solves and the
//     forward passes twice when P is at most the check's limit.
//   - dual: the N×P Jacobian of the loss terms (one per-example pass);
//     its N×N kernel, its eigenvalues and Cholesky factor; a solve per block;
//     the same forward passes per block as exact; the damping check when N
//     is at most the limit.
//   - low-rank: about 1.5k curvature products over at most a few thousand
//     sequences (k the rank), a streamed pass over the training and the
//     evaluated steps, and linearised leave-one-out predictions in the
//     rank-k space (no forward pass per block); no damping check. Not
//     predicted: the conjugate-gradient refinement of blocks of high
//     leverage, which made the low-rank path of examples/synthetic (481
//     parameters, 10-term blocks) 53 s against a predicted 3 s; KeepBelow
//     keeps such small problems on the size rule's solver.
package solvecost

import (
	"fmt"
	"math"
	"strings"
	"time"

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

// Calibrated constants (benchmarks/solver/RESULTS.md, two cores under a
// load average of about 7): seconds per unit of work.
const (
	// secProduct is one curvature product (or curvature column) per time
	// step and parameter: 415 columns of the 3,991-parameter LSTM over
	// 14,400 steps took 85 s.
	secProduct = 3.6e-9
	// secForward is one forward pass per time step and parameter: 600
	// leave-one-out forward passes over 4,800 evaluated steps of the same
	// model took 8.7 s.
	secForward = 7.5e-10
	// secFlop is one flop of the dense linear algebra (kernel products,
	// Cholesky, eigendecomposition, solves).
	secFlop = 1e-9
	// eigenFlops is the flops of a symmetric eigendecomposition of an
	// n×n matrix with its vectors (the exact path), over n³; valueFlops
	// those of its eigenvalues and Cholesky factor (the dual path's
	// kernel: the tridiagonal reduction, 4/3, and the factor, 1/3).
	eigenFlops = 9
	valueFlops = 5.0 / 3
	// lowRankProducts is the curvature products of the low-rank factor,
	// over its rank (the Lanczos vectors, the trace samples and the
	// inverse probes): 1.5 from the 302 products of rank 200.
	lowRankProducts = 1.5
)

// Predict returns the predicted cost of the exact, dual and low-rank
// solvers on s, in that order.
func Predict(s Shape) []Estimate {
	P, N, B := float64(s.Params), float64(s.Terms), float64(s.Blocks)
	S, M := float64(s.TrainSteps), float64(s.EvalSteps)
	loo := secForward * B * M * P // one forward pass over the evaluated steps per block
	// after is the work after the factorisation: the solves and the
	// Newton step's leverage (each about one solve per block) and the
	// leave-one-out predictions, once, and twice more for the damping
	// check (its predictions on at most CheckSeqs evaluated sequences).
	after := func(dim int, solve float64) float64 {
		if s.CheckMaxDim <= 0 || dim > s.CheckMaxDim {
			return loo + 2*solve
		}
		share := 1.0
		if s.CheckSeqs > 0 && s.EvalSeqs > s.CheckSeqs {
			share = float64(s.CheckSeqs) / float64(s.EvalSeqs)
		}
		return loo*(1+2*share) + 6*solve
	}
	exact := secProduct*P*S*P + secFlop*(eigenFlops+2)*P*P*P + after(s.Params, secFlop*2*B*P*P)
	dual := secProduct*S*P + secFlop*(N*N*P+valueFlops*N*N*N) + after(s.Terms, secFlop*2*B*N*P)
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
	// KeepBelow is the predicted time under which the solver of the size
	// rule is kept whatever the others' predictions: the prediction is
	// coarse, and a choice that stays the same for small problems keeps
	// their results reproducible.
	KeepBelow = 30 * time.Second
	// Margin is how many times faster another solver must be predicted
	// to replace the size rule's: the tolerance the project sets the
	// automatic choice (within 1.5 times the fastest); the predictions of
	// benchmarks/solver's runs are within about a third of the measured
	// times.
	Margin = 1.5
	// MaxBytes is the memory above which a solver is not chosen.
	MaxBytes = 4 << 30
)

// Choose returns the solver to use among the eligible ones (the size
// rule's choice rule first among them; rule need not be predicted, e.g.
// conjugate gradients, and is then kept), whether it differs from rule,
// and the sentence that states the prediction and the choice (empty when
// the rule's solver is predicted to take less than KeepBelow and is kept).
func Choose(s Shape, rule Solver, eligible []Solver) (Solver, bool, string) {
	all := Predict(s)
	var cands []Estimate
	var ruleEst *Estimate
	for i := range all {
		e := all[i]
		ok := false
		for _, el := range eligible {
			ok = ok || el == e.Solver
		}
		if !ok {
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
		return rule, false, ""
	}
	best := cands[0]
	for _, e := range cands[1:] {
		if e.Seconds < best.Seconds {
			best = e
		}
	}
	choice := rule
	if ruleEst.Seconds >= KeepBelow.Seconds() && best.Solver != rule &&
		(best.Seconds*Margin < ruleEst.Seconds || ruleEst.Bytes > MaxBytes) {
		choice = best.Solver
	}
	if choice == rule && ruleEst.Seconds < KeepBelow.Seconds() {
		return rule, false, ""
	}
	return choice, choice != rule, Sentence(cands, choice)
}

// Sentence states the predictions of ests and the choice, e.g.
// "predicted time (memory): exact 41m (0.38 GB), dual 11m (0.09 GB),
// lowrank 1.6m (0.02 GB); lowrank chosen".
func Sentence(ests []Estimate, choice Solver) string {
	parts := make([]string, len(ests))
	for i, e := range ests {
		parts[i] = fmt.Sprintf("%s %s (%s)", e.Solver, Duration(e.Seconds), bytesText(e.Bytes))
	}
	return fmt.Sprintf("predicted time (memory): %s; %s chosen", strings.Join(parts, ", "), choice)
}

// Duration renders a predicted time in seconds coarsely: "40 s", "12 min",
// "2.5 h".
func Duration(sec float64) string {
	switch {
	case sec < 1:
		return "under 1 s"
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
