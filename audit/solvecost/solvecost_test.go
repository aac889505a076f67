package solvecost

import (
	"math"
	"strings"
	"testing"
)

// TestPredictHandWorked checks Predict against the sums worked by hand
// for P = 10, N = 4, B = 2, 20 training and 6 evaluated steps in 2 and 3
// sequences, rank 5, the damping check on (limit 100: both factorisations
// are under it, so the leave-one-out work counts three times and the
// leverage solves three times).
func TestPredictHandWorked(t *testing.T) {
	s := Shape{Params: 10, Terms: 4, Blocks: 2, TrainSteps: 20, EvalSteps: 6, TrainSeqs: 2, EvalSeqs: 3, Rank: 5, CheckMaxDim: 100}
	loo := 3e-10 * 2 * 6 * 10 // 3.6e-8
	// exact: 10 columns over 20 steps (3.5e-10*10*20*10 = 7e-7), 11*1000
	// flops of eigendecomposition and inverse (3.08e-6), 3 loo, and 3
	// leverage solves of N P² = 400 flops (3.36e-7).
	exact := 7e-7 + 3.08e-6 + 3*loo + 3.36e-7
	// dual: one pass for the Jacobian (1e-9*20*10 = 2e-7), 16*10 +
	// 2.7*64 flops (kernel, eigenvalues and factor: 9.3184e-8), 3 loo
	// and 3 leverage solves of N³ = 64 flops (5.376e-8).
	dual := 2e-7 + 9.3184e-8 + 3*loo + 5.376e-8
	// low-rank: 1.5*5 products over 20 steps (1e-9*7.5*20*10 = 1.5e-6),
	// a pass over 26 steps (2.6e-7), 2*5*5*10 and 2*2*6*5 flops (1.4e-7
	// and 3.36e-8).
	low := 1.5e-6 + 2.6e-7 + 1.4e-7 + 3.36e-8
	got := Predict(s)
	for i, want := range []float64{exact, dual, low} {
		if math.Abs(got[i].Seconds-want) > 1e-12*want+1e-18 {
			t.Errorf("%s: predicted %.6g s, worked by hand %.6g s", got[i].Solver, got[i].Seconds, want)
		}
	}
	if got[0].Bytes != 8*3*100 || got[1].Bytes != 8*(40+32) || got[2].Bytes != 8*(50+10+30) {
		t.Errorf("bytes %v %v %v", got[0].Bytes, got[1].Bytes, got[2].Bytes)
	}
	if r := Refinement(s, 100); math.Abs(r-2e-5) > 1e-18 { // 1e-9 * 100 products * 20 steps * 10
		t.Errorf("Refinement of 100 products: %g s, worked by hand 2e-5 s", r)
	}
}

// windowed is the windowed LSTM of benchmarks/solver (3,991 parameters,
// 24-step windows, one label each) with n training and m test windows.
func windowed(n, m int) Shape {
	return Shape{Params: 3991, Terms: n, Blocks: n, TrainSteps: 24 * n, EvalSteps: 24 * m, TrainSeqs: n, EvalSeqs: m,
		CurvatureSteps: 24 * min(n, 2000), Rank: 200, CheckMaxDim: 2000, CheckSeqs: 200}
}

// TestChoose checks the choice on the shapes of benchmarks/solver,
// predicted by hand (CPU seconds, the constants of this package):
//   - the windowed LSTM at 1,824 windows: dual the kernel's 1.33e10
//     flops (3.7 s), 2.7*6.07e9 for its eigenvalues and factor (4.6 s),
//     3*6.07e9 solve flops (5.1 s), leave-one-out
//     3e-10*1824*30720*3991 = 67 s times 1+2*200/1280 (88 s), the
//     Jacobian pass 0.17 s: 102 s; low-rank 1e-9*300*43776*3991 = 52 s,
//     a pass 0.3 s, 2*3104*200*3991 and 2*1824*30720*200 flops (1.4 and
//     6.3 s): 60 s. 102 > 1.5*60: low-rank (measured 402 s and 163 s of
//     wall under load).
//   - its first 600 windows and 200 test ones: dual about 11 s, low-rank
//     about 18 s: dual kept (measured 46 s and 38.5 s).
//   - the quickstart's GRU (297 parameters, 5,384 terms in 300
//     sequences, 5,301 evaluated steps in 300): exact 0.17 s of columns,
//     0.08 s of eigendecomposition, 0.14 s of leave-one-out times
//     1+2*200/300, 0.13 s of leverage times 3: 0.98 s; low-rank 0.18 s of
//     products and 0.07 s of the rest: 0.25 s. Both Margin and MinSaving
//     are met: low-rank, with a slack of 1.5*0.98-0.25 s for the
//     refinement (measured 3.4 and 1.0 CPU seconds).
//   - examples/chickweight (393 parameters, 407 terms in 39 sequences):
//     exact 0.26 s (0.19 s of it the eigendecomposition), low-rank
//     0.03 s: a saving under MinSaving, exact kept without a sentence.
func TestChoose(t *testing.T) {
	all := []Solver{Exact, Dual, LowRank}
	c := Choose(windowed(1824, 1280), Dual, all)
	if c.Solver != LowRank || !c.Changed || c.Slack != 0 || !strings.Contains(c.Say, "lowrank chosen") || !strings.Contains(c.Say, "dual 2 min") {
		t.Errorf("1,824 windows: %+v, want lowrank, changed, no slack, with the prediction", c)
	}
	if c := Choose(windowed(1824, 1280), Dual, []Solver{Exact, Dual}); c.Solver != Dual || c.Changed {
		t.Errorf("1,824 windows without low-rank: %+v, want dual", c)
	}
	if c := Choose(windowed(600, 200), Dual, all); c.Solver != Dual || c.Changed {
		t.Errorf("600 windows: %+v, want dual kept", c)
	}
	gru := Shape{Params: 297, Terms: 5384, Blocks: 300, TrainSteps: 5384, EvalSteps: 5301, TrainSeqs: 300, EvalSeqs: 300,
		CurvatureSteps: 5384, Rank: 74, CheckMaxDim: 2000, CheckSeqs: 200}
	c = Choose(gru, Exact, all)
	est := Predict(gru)
	if c.Solver != LowRank || !c.Changed || math.Abs(c.Slack-(1.5*est[0].Seconds-est[2].Seconds)) > 1e-12 || c.Slack < 1.1 || c.Slack > 1.3 {
		t.Errorf("quickstart GRU: %+v (predicted %+v), want lowrank with a slack of about 1.5*0.98-0.25 = 1.22 s", c, est)
	}
	chick := Shape{Params: 393, Terms: 407, Blocks: 39, TrainSteps: 407, EvalSteps: 121, TrainSeqs: 39, EvalSeqs: 12,
		CurvatureSteps: 407, Rank: 98, CheckMaxDim: 2000, CheckSeqs: 200}
	if c := Choose(chick, Exact, all); c.Solver != Exact || c.Changed || c.Say != "" {
		t.Errorf("chickweight: %+v, want exact with no sentence", c)
	}
	if c := Choose(windowed(1824, 1280), "cg", all); c.Solver != "cg" || c.Changed {
		t.Errorf("a rule's solver the model does not predict: %+v, want it kept", c)
	}
	// 14,000 parameters: the exact path's 8*3*P² bytes (4.4 GiB) exceed
	// MaxBytes, so the low-rank path is taken even if exact were faster.
	big := Shape{Params: 14000, Terms: 20, Blocks: 2, TrainSteps: 20, EvalSteps: 2, TrainSeqs: 2, EvalSeqs: 1, Rank: 200}
	if c := Choose(big, Exact, []Solver{Exact, LowRank}); c.Solver != LowRank || !c.Changed {
		t.Errorf("exact over the memory limit: %+v, want lowrank", c)
	}
}

// TestRetreat: the audit returns to the exact path only when Choose
// moved it from there (a slack), the blocks get Newton steps from their
// rows and the refinement's predicted budget exceeds the slack.
func TestRetreat(t *testing.T) {
	if say := Retreat(3.5, 10, true, 0.0367); !strings.Contains(string(say), "0.0367") || !strings.Contains(string(say), "up to 10 s more") || !strings.Contains(say.Error(), "exact was used") {
		t.Errorf("budget over the slack: %q, want a retreat stating the leverage and 10 s", say)
	}
	for _, c := range []struct {
		slack, refine float64
		perBlock      bool
	}{{3.5, 10, false}, {3.5, 2, true}, {0, 10, true}} {
		if say := Retreat(c.slack, c.refine, c.perBlock, 0.03); say != "" {
			t.Errorf("Retreat(%v): %q, want no retreat", c, say)
		}
	}
	// The budget: a quarter of the factor's products, or 1e9 / (sequences
	// × P) when more: 1e9 / (1000 × 481) = 2,079 for examples/synthetic
	// (250 factor products), 0.25 × 302 = 75 for 10,000 sequences of the
	// 3,991-parameter LSTM (1e9 / 3.991e7 = 25).
	if b := RefineBudget(250, 1000, 481); b != 2079 {
		t.Errorf("RefineBudget(250, 1000, 481) = %d, want 2079", b)
	}
	if b := RefineBudget(302, 10000, 3991); b != 75 {
		t.Errorf("RefineBudget(302, 10000, 3991) = %d, want 75", b)
	}
}

func TestDuration(t *testing.T) {
	for sec, want := range map[float64]string{0.02: "under 0.1 s", 0.98: "1.0 s", 9.98: "10 s", 40: "40 s", 777: "13 min", 9000: "2.5 h"} {
		if got := Duration(sec); got != want {
			t.Errorf("Duration(%g) = %q, want %q", sec, got, want)
		}
	}
}
