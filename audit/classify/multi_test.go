package classify

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// TestJackknifeSetK works the K-class jackknife+ rule by hand: two
// blocks whose models give the forecast probabilities (0.6, 0.3, 0.1)
// and (0.5, 0.3, 0.2), four training scores.
func TestJackknifeSetK(t *testing.T) {
	lp := [][]float64{{0.6, 0.3, 0.1}, {0.5, 0.3, 0.2}}
	res := []interval.Residual{{Blk: 0, Seq: 0, R: 0.2}, {Blk: 0, Seq: 1, R: 0.5}, {Blk: 1, Seq: 2, R: 0.35}, {Blk: 1, Seq: 3, R: 0.8}}
	none := interval.Skip{Seq: -1, Blk: -1}
	// LAC scores: block 0 (0.4, 0.7, 0.9), block 1 (0.5, 0.7, 0.8).
	// Counts of training scores below: label 0: 1 + 1 = 2; label 1:
	// 2 + 1 = 3; label 2: 2 + 1 = 3 (0.8 is not above 0.8).
	// alpha 0.5: bound 0.5 * 5 = 2.5: only label 0.
	if got := JackknifeSetK(LAC, 0.5, 3, lp, res, none, 0.5); !slices.Equal(got, []int{0}) {
		t.Errorf("alpha 0.5: %v, want [0]", got)
	}
	// alpha 0.25: bound 3.75: every label.
	if got := JackknifeSetK(LAC, 0.25, 3, lp, res, none, 0.5); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("alpha 0.25: %v, want [0 1 2]", got)
	}
	// Leaving out sequence 0 (n = 3, bound 2): label 0 counts 1.
	if got := JackknifeSetK(LAC, 0.5, 3, lp, res, interval.Skip{Seq: 0, Blk: -1}, 0.5); !slices.Equal(got, []int{0}) {
		t.Errorf("skip: %v, want [0]", got)
	}
	// Block 1 not estimated: n = 2, bound 1.5; label 0 counts 1, label
	// 1 and 2 count 2.
	if got := JackknifeSetK(LAC, 0.5, 3, [][]float64{lp[0], nil}, res, none, 0.5); !slices.Equal(got, []int{0}) {
		t.Errorf("nil block: %v, want [0]", got)
	}
	// No block: every label.
	if got := JackknifeSetK(LAC, 0.5, 3, [][]float64{nil, nil}, res, none, 0.5); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("no block: %v, want [0 1 2]", got)
	}
	// APS at u = 0.5: block 0 (0.3, 0.75, 0.95), block 1 (0.25, 0.65,
	// 0.9): label 0 counts 1 + 0, label 1 counts 2 + 1; bound 2.5.
	if got := JackknifeSetK(APS, 0.5, 3, lp, res, none, 0.5); !slices.Equal(got, []int{0}) {
		t.Errorf("APS: %v, want [0]", got)
	}
}

// TestMulti checks the targets, the number At gives and a forecast of
// Point against hand-worked values.
func TestMulti(t *testing.T) {
	m, err := (&Options{Score: LAC, ClassWeights: []float64{1, 2, 4}, Smoothing: 0.3}).Multi(3)
	if err != nil {
		t.Fatal(err)
	}
	target, weight, label := make([]float64, 4), make([]float64, 4), int32(-1)
	if err := m.Targets(1, target, weight, &label); err != nil || label != 1 {
		t.Fatal(err, label)
	}
	// PyTorch: y_k = (1-eps) w_c [k = c] + eps/K w_k.
	want := []float64{0.1, 0.7*2 + 0.2, 0.4, 0}
	for k := range want {
		if !near(target[k], want[k], 1e-15) || weight[k] != float64(min(1, 3-k)) {
			t.Errorf("targets %v weights %v, want %v and 1, 1, 1, 0", target, weight, want)
			break
		}
	}
	for _, y := range []float64{3, -1, 0.5} {
		if err := m.Targets(y, target, weight, &label); err == nil || !strings.Contains(err.Error(), "class index 0..2") {
			t.Errorf("label %g: %v", y, err)
		}
	}
	if _, err := (&Options{ClassWeights: []float64{1, 2}}).Multi(3); err == nil {
		t.Error("2 class weights for 3 classes accepted")
	}
	if none, err := (*Options)(nil).Multi(0); none != nil || err != nil || none.Labels(3) != nil || none.Logits(2, nil) != nil {
		t.Errorf("Multi(0): %v, %v", none, err)
	}
	// Logits log(1), log(2), log(5): probabilities 0.125, 0.25, 0.625.
	f := []float64{0, math.Log(2), math.Log(5)}
	if y, v := m.At(f, 1); y != 1 || !near(v, 0.25, 1e-15) {
		t.Errorf("At label 1: %g %g, want 1 0.25", y, v)
	}
	if y, v := m.At(f, -1); !math.IsNaN(y) || !near(v, 0.625, 1e-15) {
		t.Errorf("At without label: %g %g, want NaN 0.625", y, v)
	}
	// Two blocks' logits: the interval of each class is ProbInterval of
	// its probabilities.
	loo := [][]float64{{0, 1, 1.5}, {0.2, 0.5, 1.7}, {math.NaN(), 0, 0}}
	res := []interval.Residual{{Blk: 0, Seq: 0, R: 0.3}, {Blk: 1, Seq: 1, R: 0.9}}
	fc := m.Point(0.1, f, 2, loo, res, interval.Skip{Seq: -1, Blk: -1})
	if fc.Label != 2 || len(fc.Lowers) != 3 || !math.IsNaN(fc.ProbLower) {
		t.Fatalf("forecast %+v", fc)
	}
	for k := range 3 {
		lo, up := ProbInterval(0.1, fc.Probs[k], []float64{Probs(loo[0])[k], Probs(loo[1])[k]})
		if !near(fc.Lowers[k], lo, 1e-15) || !near(fc.Uppers[k], up, 1e-15) {
			t.Errorf("class %d: [%g, %g], want [%g, %g]", k, fc.Lowers[k], fc.Uppers[k], lo, up)
		}
	}
	if want := JackknifeSetK(LAC, 0.1, 3, [][]float64{Probs(loo[0]), Probs(loo[1]), nil}, res, interval.Skip{Seq: -1, Blk: -1}, fc.u); !slices.Equal(fc.Set, want) {
		t.Errorf("set %v, want %v", fc.Set, want)
	}
	// Split conformal: limits p ± 0.8 give q = 0.8: LAC scores 0.875,
	// 0.75, 0.375: labels 1 and 2.
	fc.SplitFrom(0.625-0.8, 0.625+0.8)
	if !slices.Equal(fc.Split, []int{1, 2}) {
		t.Errorf("split set %v, want [1 2]", fc.Split)
	}
	fc.SplitFrom(math.NaN(), math.NaN())
	if fc.Split == nil || len(fc.Split) != 0 {
		t.Errorf("split set without limits %v, want []", fc.Split)
	}
	// A binary forecast keeps the labels inside its limits.
	b := Forecast{Probs: BinaryProbs(0.7)}
	b.SplitFrom(0.5, 1.2)
	if !slices.Equal(b.Split, []int{1}) {
		t.Errorf("binary split set %v, want [1]", b.Split)
	}
}
