package datacheck

import (
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// TestAlternatives: the column check's alternatives reorder the features
// and shift the targets as the flags they print would.
func TestAlternatives(t *testing.T) {
	q := &blocks.Sequence{ID: "a"}
	for r := range 5 {
		q.X = append(q.X, []float64{float64(r), 10 + float64(r), 20 + float64(r)})
		q.Y = append(q.Y, []float64{100 + float64(r)})
	}
	d := &blocks.Dataset{Features: []string{"x1", "x2", "x3"}, Targets: []string{"y"}, Seqs: []*blocks.Sequence{q}}
	p := Permuted(d, []int{1, 0, 2})
	if p.Features[0] != d.Features[1] || p.Seqs[0].X[2][0] != d.Seqs[0].X[2][1] || p.Seqs[0].X[2][1] != d.Seqs[0].X[2][0] || p.Seqs[0].X[2][2] != d.Seqs[0].X[2][2] {
		t.Errorf("permuted: %v, row %v from %v", p.Features, p.Seqs[0].X[2], d.Seqs[0].X[2])
	}
	s := Shifted(d, 1)
	if s.Seqs[0].Y[0][0] != q.Y[1][0] || s.Seqs[0].Y[q.Len()-1] != nil || s.Shift != 1 {
		t.Errorf("shift 1: row 0 target %v (want %v), last %v", s.Seqs[0].Y[0], q.Y[1], s.Seqs[0].Y[q.Len()-1])
	}
	back := Shifted(s, 0)
	if back.Seqs[0].Y[1][0] != q.Y[1][0] || back.Seqs[0].Y[0] != nil {
		t.Errorf("shift 1 then 0: %v, %v", back.Seqs[0].Y[0], back.Seqs[0].Y[1])
	}
	if n := len(Permutations(3)); n != 5 {
		t.Errorf("permutations of 3: %d, want 5", n)
	}
	if n := len(Permutations(6)); n != 16 {
		t.Errorf("orders of 6 features tried: %d, want 15 exchanges and the reversed", n)
	}
	f := FitCheck{RMSE: 1, Alternatives: []Alternative{{Shift: 0, RMSE: 0.5}, {Features: []string{"x2", "x1"}, Shift: 1, RMSE: 0.2}}}
	if b := f.BestAlternative(); b == nil || b.Flags() != "--features x2,x1 --shift 1" {
		t.Errorf("best alternative %+v", b)
	}
}

// TestDependenceLength: the block length with |rho|^K <= 0.05, at most
// half the longest sequence; 1 without correlation.
func TestDependenceLength(t *testing.T) {
	for _, tc := range []struct {
		rho        float64
		correlated bool
		maxLen     int
		want       int
	}{
		{0.5, true, 100, 5},   // 0.5^4 = 0.0625, 0.5^5 = 0.031
		{-0.5, true, 100, 5},  // the sign does not matter
		{0.9, true, 100, 29},  // 0.9^28 = 0.052, 0.9^29 = 0.047
		{0.9, true, 20, 10},   // two intervals of 10
		{0.05, false, 100, 1}, // no correlation
		{1, true, 30, 15},
	} {
		if got := dependenceLength(tc.rho, tc.correlated, tc.maxLen, 0.05); got != tc.want {
			t.Errorf("dependenceLength(%v, %v, %d) = %d, want %d", tc.rho, tc.correlated, tc.maxLen, got, tc.want)
		}
	}
	if ManySequences(0.1) != 20 || ManySequences(0.05) != 38 || ManySequences(0.5) != 20 {
		t.Errorf("ManySequences: %d, %d, %d; want 20, 38, 20", ManySequences(0.1), ManySequences(0.05), ManySequences(0.5))
	}
}

// TestDecide: the shapes of the training data choose the scheme, and a
// scheme in use shorter than the dependence asks does not fit.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		a     SchemeAdvice
		shape SchemeShape
		want  string
		fits  bool
	}{
		{SchemeAdvice{Sequences: 30, Used: "sequence"}, ShapeMany, "sequence", true},
		{SchemeAdvice{Sequences: 30, Used: "interval", UsedLength: 5}, ShapeMany, "sequence", false},
		{SchemeAdvice{Sequences: 1, MaxLength: 200, Lag1: 0.5, Correlated: true, Used: "interval", UsedLength: 3}, ShapeOne, "interval", false},
		{SchemeAdvice{Sequences: 1, MaxLength: 200, Lag1: 0.5, Correlated: true, Used: "interval", UsedLength: 5}, ShapeOne, "interval", true},
		{SchemeAdvice{Sequences: 5, MaxLength: 200, Used: "interval", UsedLength: 1}, ShapeFew, "nested", true},
	} {
		a := tc.a
		a.Decide(0.1, 0.05)
		if a.Shape != tc.shape || a.Scheme != tc.want || a.Fits != tc.fits {
			t.Errorf("%+v: shape %s, scheme %s, fits %v; want %s, %s, %v", tc.a, a.Shape, a.Scheme, a.Fits, tc.shape, tc.want, tc.fits)
		}
	}
}
