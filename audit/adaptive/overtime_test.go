package adaptive

import (
	"math"
	"testing"
)

// TestNeweyWestTolerance: the dependence-aware tolerance on a series
// worked by hand. Indicators 1 1 0 0 1 1 0 0 (mean 1/2, deviations
// ±1/2): g0 = 1/4; the 7 lag-1 products are +,-,+,-,+,-,+ times 1/4, so
// g1 = (1/4)/8 = 1/32; with lag 1 the long-run variance is g0 + 2 (1 -
// 1/2) g1 = 9/32, inflation 9/8, 64/9 effective values, and the
// tolerance at 0.9 is 2 sqrt(0.09 * 9/8 / 8) = 0.225. Split in two
// sequences (1 1 0 0 | 1 1 0 0) the pair across the split drops out:
// the 6 pairs within are +,-,+ twice, g1 = (2/4)/8 = 1/16, and the
// inflation (1/4 + 1/16)/(1/4) = 5/4.
func TestNeweyWestTolerance(t *testing.T) {
	x := []float64{1, 1, 0, 0, 1, 1, 0, 0}
	if got := neweyWest([][]float64{x}, 1); math.Abs(got-9.0/8) > 1e-15 {
		t.Errorf("inflation %v, want 9/8", got)
	}
	if got := DependentTolerance(0.9, 8, 9.0/8); math.Abs(got-0.225) > 1e-15 {
		t.Errorf("tolerance %v, want 0.225", got)
	}
	if got := neweyWest([][]float64{x[:4], x[4:]}, 1); math.Abs(got-5.0/4) > 1e-15 {
		t.Errorf("two sequences: inflation %v, want 5/4", got)
	}
	// Alternating indicators are negatively correlated: never below 1
	// (no claim of more precision than independent values give).
	if got := neweyWest([][]float64{{1, 0, 1, 0, 1, 0}}, 2); got != 1 {
		t.Errorf("alternating: inflation %v, want 1", got)
	}
}

// TestOverTime: rolling, per-sequence and early/late coverage of two
// sequences of 12 labelled steps, worked by hand: A covers every value,
// B the first 4 of its 12; W = 10 (rollingWindow's floor), lag
// floor(4 (12/100)^(2/9)) = 2.
func TestOverTime(t *testing.T) {
	var vals []Value
	for i, id := range []string{"A", "B"} {
		for r := range 12 {
			y := 0.0
			if id == "B" && r >= 4 {
				y = 5 // outside [-1, 1]
			}
			hit := 0.0
			if -1 <= y && y <= 1 {
				hit = 1
			}
			vals = append(vals, Value{Seq: i, Step: float64(100 + r), Hit: hit, Err: y - float64(r%2)})
		}
	}
	o := Over([]string{"A", "B"}, vals, 0.1, 0)
	if o.Window != 10 || o.Lag != 2 || o.Long {
		t.Fatalf("window %d, lag %d, long %v; want 10, 2, false", o.Window, o.Lag, o.Long)
	}
	// Pooled windows end at steps 109, 110, 111, holding B's misses at
	// rows 4-9, 4-10 and 4-11: 14/20, 13/20, 12/20.
	want := []RollingPoint{{109, 14.0 / 20}, {110, 13.0 / 20}, {111, 12.0 / 20}}
	if len(o.Pooled) != 3 || o.Worst != 12.0/20 {
		t.Fatalf("pooled %v worst %v, want %v", o.Pooled, o.Worst, want)
	}
	for i, p := range want {
		if o.Pooled[i] != p {
			t.Errorf("pooled %d: %v, want %v", i, o.Pooled[i], p)
		}
	}
	// Thirds of 12 steps: 4 each; early 8/8, late 4/8 (B misses all 4).
	if o.Early != 1 || o.Late != 0.5 || o.EarlyPoints != 8 || o.LatePoints != 8 {
		t.Errorf("early %v (%d), late %v (%d); want 1 (8), 0.5 (8)", o.Early, o.EarlyPoints, o.Late, o.LatePoints)
	}
	if len(o.Sequences) != 2 || o.Sequences[0].Under || !o.Sequences[1].Under || o.Sequences[1].Coverage != 4.0/12 || o.Sequences[1].Worst != 2.0/10 {
		t.Errorf("per sequence %+v", o.Sequences)
	}
	// Errors y - f: near 0 for A and B's first rows, 4 or 5 for B's last
	// 8: neighbours are alike, the correlation positive; 11 pairs each.
	if !(o.Autocorrelation > 0.5) || o.AutocorrPairs != 22 {
		t.Errorf("autocorrelation %v over %d pairs", o.Autocorrelation, o.AutocorrPairs)
	}
}

// TestThirds checks a sequence's early and late coverage and its drift
// flag on hand-worked values: 15 values, thirds of 5; at p = 0.9 and no
// inflation the tolerance is 2 sqrt(0.09 × 2/5) = 0.379.
func TestThirds(t *testing.T) {
	t.Parallel()
	c := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}
	if e, l, d := thirds(c, 0.9, 1); e != 1 || l != 0 || !d {
		t.Errorf("ones then zeros: early %g late %g drift %v, want 1, 0, true", e, l, d)
	}
	c = []float64{1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1} // 0.8 and 0.8
	if e, l, d := thirds(c, 0.9, 1); e != 0.8 || l != 0.8 || d {
		t.Errorf("steady: early %g late %g drift %v, want 0.8, 0.8, false", e, l, d)
	}
	// 0.6 apart: a drift at inflation 1, not at inflation 3 (tolerance 0.657).
	c = []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}
	if _, _, d := thirds(c, 0.9, 1); !d {
		t.Error("1 against 0.4 at inflation 1: no drift")
	}
	if _, _, d := thirds(c, 0.9, 3); d {
		t.Error("1 against 0.4 at inflation 3: drift")
	}
	if e, _, d := thirds([]float64{1, 0, 1, 0, 1}, 0.9, 1); !math.IsNaN(e) || d {
		t.Errorf("five values: early %g drift %v, want NaN, false", e, d)
	}
}
