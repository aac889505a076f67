package classify

import (
	"math"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/interval"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestScores checks the three scores on hand-worked values.
func TestScores(t *testing.T) {
	p := []float64{0.2, 0.5, 0.3}
	for _, c := range []struct {
		s    Score
		y    int
		want float64
	}{
		{LAC, 0, 0.8}, {LAC, 1, 0.5},
		{APS, 0, 1.0}, {APS, 2, 0.8}, {APS, 1, 0.5},
		{RAPS, 0, 1.02}, {RAPS, 2, 0.81}, {RAPS, 1, 0.5},
	} {
		if got := c.s.Of(p, c.y); !near(got, c.want, 1e-15) {
			t.Errorf("%s of label %d: %g, want %g", c.s, c.y, got, c.want)
		}
	}
	// A binary label of probability 0.3 (LAC score 0.7) is not the top
	// class: APS counts the other class's 0.7 above it.
	if got := APS.Binary(0.7, 1); !near(got, 1, 1e-15) {
		t.Errorf("APS.Binary(0.7, 1) = %g, want 1", got)
	}
	if got := APS.Binary(0.2, 1); !near(got, 0.8, 1e-15) {
		t.Errorf("APS.Binary(0.2, 1) = %g, want 0.8", got)
	}
	// Randomised: the label's own mass counts u p_y: 0.7 + 0.25 * 0.3.
	if got := APS.Binary(0.7, 0.25); !near(got, 0.775, 1e-15) {
		t.Errorf("APS.Binary(0.7, 0.25) = %g, want 0.775", got)
	}
	if got := LAC.Binary(0.7, 0.25); !near(got, 0.7, 1e-15) {
		t.Errorf("LAC.Binary(0.7, 0.25) = %g, want 0.7 (not randomised)", got)
	}
	// Uniform is reproducible and spreads over [0, 1).
	if Uniform(1, 2) != Uniform(1, 2) || Uniform(1, 2) == Uniform(2, 1) {
		t.Error("Uniform is not a reproducible function of its ordered keys")
	}
	mean := 0.0
	for i := range 10000 {
		u := Uniform(uint64(i))
		if u < 0 || u >= 1 {
			t.Fatalf("Uniform(%d) = %g", i, u)
		}
		mean += u / 10000
	}
	if math.Abs(mean-0.5) > 0.01 {
		t.Errorf("mean of 10,000 uniforms %g", mean)
	}
	if _, err := ParseScore("bogus"); err == nil {
		t.Error("ParseScore accepted bogus")
	}
	if got := SplitSet(LAC, p, 0.75); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("LAC split set at q = 0.75: %v, want [1 2]", got)
	}
	if got := SplitSet(APS, p, 0.75); !slices.Equal(got, []int{1}) {
		t.Errorf("APS split set at q = 0.75: %v, want [1]", got)
	}
}

// TestJackknifeSet works the jackknife+ rule by hand: two blocks
// predicting 0.9 and 0.8, four leave-one-block-out residuals.
func TestJackknifeSet(t *testing.T) {
	pred := []float64{0.9, 0.8}
	res := []interval.Residual{{Blk: 0, Seq: 0, R: 0.1}, {Blk: 0, Seq: 1, R: 0.3}, {Blk: 1, Seq: 2, R: 0.05}, {Blk: 1, Seq: 3, R: 0.6}}
	none := interval.Skip{Seq: -1, Blk: -1}
	// Label 1: scores 0.1 (block 0), 0.2 (block 1): one residual below
	// (0.05), 1 < 0.75 * 5. Label 0: 0.9, 0.8 exceed all four: 4 >= 3.75.
	if got := JackknifeSet(LAC, 0.25, pred, res, none, 0.5); !slices.Equal(got, []int{1}) {
		t.Errorf("alpha 0.25: %v, want [1]", got)
	}
	// At alpha 0.1 the bound is 4.5: both labels.
	if got := JackknifeSet(LAC, 0.1, pred, res, none, 0.5); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("alpha 0.1: %v, want [0 1]", got)
	}
	// Leaving out sequence 2 (a self-audit): label 1 counts 0 of 3.
	if got := JackknifeSet(LAC, 0.25, pred, res, interval.Skip{Seq: 2, Blk: -1}, 0.5); !slices.Equal(got, []int{1}) {
		t.Errorf("skip: %v, want [1]", got)
	}
	// A block not estimated drops its residuals: n = 2, bound 2.25;
	// label 0 counts 2 (< 2.25).
	if got := JackknifeSet(LAC, 0.25, []float64{math.NaN(), 0.8}, res, none, 0.5); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("NaN block: %v, want [0 1]", got)
	}
}

// TestProbInterval checks the jackknife interval on logits -1 and 1
// (n = 2: se = sqrt(1/2 * 2) = 1) about 0.5.
func TestProbInterval(t *testing.T) {
	s := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	lo, up := ProbInterval(0.05, 0.5, []float64{s(-1), s(1), math.NaN()})
	z := 1.959963984540054
	if !near(lo, s(-z), 1e-12) || !near(up, s(z), 1e-12) {
		t.Errorf("interval [%g, %g], want [%g, %g]", lo, up, s(-z), s(z))
	}
	if lo, _ := ProbInterval(0.05, 0.5, []float64{0.3}); !math.IsNaN(lo) {
		t.Errorf("one model: %g, want NaN", lo)
	}
}

// TestSummarize checks the figures on four binary forecasts worked by
// hand.
func TestSummarize(t *testing.T) {
	ps := []float64{0.1, 0.4, 0.35, 0.8}
	ys := []int{0, 0, 1, 1}
	sets := [][]int{{0}, {0, 1}, {0}, {}}
	fs := make([]Forecast, len(ps))
	for i := range fs {
		fs[i] = Forecast{Probs: BinaryProbs(ps[i]), ProbLower: ps[i] - 0.1, ProbUpper: ps[i] + 0.1, Set: sets[i], Label: ys[i]}
	}
	fs = append(fs, Forecast{Probs: BinaryProbs(0.9), ProbLower: 0.8, ProbUpper: 1, Set: []int{1}, Label: -1})
	above, below := 0.5, 0.3
	s := Summarize(fs, 0.1, LAC, &above, &below)
	if s.Labelled != 4 || s.Classes != 2 {
		t.Fatalf("labelled %d classes %d", s.Labelled, s.Classes)
	}
	jk := s.Jackknife
	// Covered: forecasts 0 and 1; sizes 1, 2, 1, 0.
	if !near(jk.Coverage, 0.5, 1e-15) || !near(jk.MeanSize, 1, 1e-15) || !near(jk.Singleton, 0.5, 1e-15) || !near(jk.Empty, 0.25, 1e-15) {
		t.Errorf("set figures %+v", jk)
	}
	if c := jk.BySize[1]; c.N != 2 || !near(c.Coverage, 0.5, 1e-15) {
		t.Errorf("size 1: %+v", c)
	}
	if c := jk.ByClass[1]; c.N != 2 || !near(c.Coverage, 0, 1e-15) || !near(c.MeanSize, 0.5, 1e-15) {
		t.Errorf("class 1: %+v", c)
	}
	if !near(s.Brier, 0.158125, 1e-15) {
		t.Errorf("Brier %g, want 0.158125", s.Brier)
	}
	ll := -(math.Log(0.9) + math.Log(0.6) + math.Log(0.35) + math.Log(0.8)) / 4
	if !near(s.LogLoss, ll, 1e-15) {
		t.Errorf("log loss %g, want %g", s.LogLoss, ll)
	}
	// Bins 1, 3, 4, 8: |0.1-0| + |0.35-1| + |0.4-0| + |0.8-1|, over 4.
	if !near(s.ECE, 0.3375, 1e-15) {
		t.Errorf("ECE %g, want 0.3375", s.ECE)
	}
	// Pairs (one, zero): 0.35 > 0.1, 0.35 < 0.4, 0.8 > both: 3 of 4.
	if !near(s.AUROC, 0.75, 1e-15) {
		t.Errorf("AUROC %g, want 0.75", s.AUROC)
	}
	// Flag above 0.5: lower limits 0, 0.3, 0.25, 0.7: one flagged, a 1.
	if f := s.FlagAbove; f.Flagged != 1 || !near(f.Precision, 1, 0) || !near(f.Recall, 0.5, 0) {
		t.Errorf("flag above %+v", f)
	}
	// Flag below 0.3: upper limits 0.2, 0.5, 0.45, 0.9: one flagged, a 0.
	if f := s.FlagBelow; f.Flagged != 1 || !near(f.Precision, 1, 0) || !near(f.Recall, 0.5, 0) {
		t.Errorf("flag below %+v", f)
	}
	if !near(s.ProbWidth, 0.2, 1e-12) {
		t.Errorf("probability width %g", s.ProbWidth)
	}
}

// TestWeight: class weights weigh labels 0 and 1; anything else weighs 1.
func TestWeight(t *testing.T) {
	o := &Options{ClassWeights: []float64{1, 4}}
	var none *Options
	for _, c := range []struct {
		o    *Options
		y    float64
		want float64
	}{{o, 0, 1}, {o, 1, 4}, {o, 0.5, 1}, {none, 1, 1}, {&Options{}, 1, 1}} {
		if got := c.o.Weight(c.y); got != c.want {
			t.Errorf("Weight(%g) with %+v: %g, want %g", c.y, c.o, got, c.want)
		}
	}
}

// TestAUROCTies counts a tie between a one and a zero as one half.
func TestAUROCTies(t *testing.T) {
	fs := []Forecast{{Probs: BinaryProbs(0.5), Label: 0}, {Probs: BinaryProbs(0.5), Label: 1}, {Probs: BinaryProbs(0.2), Label: 0}}
	if got := auroc(fs); !near(got, 0.75, 1e-15) {
		t.Errorf("AUROC %g, want 0.75", got)
	}
}
