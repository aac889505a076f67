package solvecost

import (
	"math"
	"strings"
	"testing"
)

// TestPredictHandWorked checks Predict against the sums worked by hand
// for P = 10, N = 4, B = 2, 20 training and 6 evaluated steps in 2 and 3
// sequences, rank 5, the damping check on (limit 100: both factorisations
// are under it, so the leave-one-out work counts three times).
func TestPredictHandWorked(t *testing.T) {
	s := Shape{Params: 10, Terms: 4, Blocks: 2, TrainSteps: 20, EvalSteps: 6, TrainSeqs: 2, EvalSeqs: 3, Rank: 5, CheckMaxDim: 100}
	loo := 7.5e-10 * 2 * 6 * 10 // 9e-8
	// exact: 10 columns over 20 steps (3.6e-9*10*20*10 = 7.2e-6), 11*1000
	// flops of linear algebra (1.1e-5), 3 loo and 6 solves of 2*2*100 flops.
	exact := 7.2e-6 + 1.1e-5 + 3*loo + 6*400e-9
	// dual: one per-example pass (3.6e-9*20*10 = 7.2e-7), 16*10 + 5/3*64
	// flops, 3 loo and 6 solves of 2*2*4*10 flops.
	dual := 7.2e-7 + (160+5.0/3*64)*1e-9 + 3*loo + 6*160e-9
	// low-rank: 1.5*5 products over 20 steps (3.6e-9*7.5*20*10 =
	// 5.4e-6), a pass over 26 steps (9.36e-7), 2*5*5*10 and 2*2*6*5 flops.
	low := 5.4e-6 + 9.36e-7 + 500e-9 + 120e-9
	got := Predict(s)
	for i, want := range []float64{exact, dual, low} {
		if math.Abs(got[i].Seconds-want) > 1e-12*want+1e-18 {
			t.Errorf("%s: predicted %.6g s, worked by hand %.6g s", got[i].Solver, got[i].Seconds, want)
		}
	}
	if got[0].Bytes != 8*3*100 || got[1].Bytes != 8*(40+32) || got[2].Bytes != 8*(50+10+30) {
		t.Errorf("bytes %v %v %v", got[0].Bytes, got[1].Bytes, got[2].Bytes)
	}
}

// windowed is the windowed LSTM of benchmarks/solver (3,991 parameters,
// 24-step windows) with n training and m test windows.
func windowed(n, m int) Shape {
	return Shape{Params: 3991, Terms: n, Blocks: n, TrainSteps: 24 * n, EvalSteps: 24 * m, TrainSeqs: n, EvalSeqs: m,
		CurvatureSteps: 24 * min(n, 2000), Rank: 200, CheckMaxDim: 2000, CheckSeqs: 200}
}

// TestChoose: on the windowed LSTM with 1,824 windows the dual form the
// size rule names was measured at 402 s against the low-rank path's
// 163 s (predicted 401 s and 217 s), and Choose takes the low-rank path; with its first 600 windows
// and 200 test windows (the dual form measured at 41 s, the low-rank path
// at 64 s) it keeps the dual form; small problems
// keep the rule's choice with no sentence; a solver that is not eligible
// is never chosen.
func TestChoose(t *testing.T) {
	all := []Solver{Exact, Dual, LowRank}
	got, changed, say := Choose(windowed(1824, 1280), Dual, all)
	if got != LowRank || !changed || !strings.Contains(say, "lowrank chosen") || !strings.Contains(say, "dual ") {
		t.Errorf("1,824 windows: %s %v %q, want lowrank, changed, with the prediction", got, changed, say)
	}
	if got, changed, _ := Choose(windowed(1824, 1280), Dual, []Solver{Exact, Dual}); got != Dual || changed {
		t.Errorf("1,824 windows without low-rank: %s %v, want dual", got, changed)
	}
	if got, changed, _ := Choose(windowed(600, 200), Dual, all); got != Dual || changed {
		t.Errorf("600 windows: %s %v, want dual kept", got, changed)
	}
	small := Shape{Params: 97, Terms: 1000, Blocks: 100, TrainSteps: 1000, EvalSteps: 1000, TrainSeqs: 100, EvalSeqs: 100, Rank: 40, CheckMaxDim: 2000}
	if got, changed, say := Choose(small, Exact, all); got != Exact || changed || say != "" {
		t.Errorf("small model: %s %v %q, want exact with no sentence", got, changed, say)
	}
	if got, changed, _ := Choose(windowed(1824, 1280), "cg", all); got != "cg" || changed {
		t.Errorf("a rule's solver the model does not predict: %s %v, want it kept", got, changed)
	}
}

func TestDuration(t *testing.T) {
	for sec, want := range map[float64]string{0.2: "under 1 s", 40: "40 s", 777: "13 min", 9000: "2.5 h"} {
		if got := Duration(sec); got != want {
			t.Errorf("Duration(%g) = %q, want %q", sec, got, want)
		}
	}
}
