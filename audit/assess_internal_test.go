package audit

import (
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// TestBeyondTraining: test sequences longer than every training sequence
// get unbounded intervals at the steps past the training data (no
// leave-one-out residual exists there); those values are kept in the
// sequences but left out of the pooled figures and of the verdict, and
// summarised apart. Checked by counting them independently from the
// sequences' M (0 residuals) and targets.
func TestBeyondTraining(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 14, 0, 4, 6, 11)
	test := randomData(t, "test", g, graph.BatchFirst, 10, 0, 8, 9, 12)
	res, err := Run(r0(t), g, train, test, &Options{Layout: graph.BatchFirst, Solver: Exact})
	if err != nil {
		t.Fatal(err)
	}
	trainRows := train.MaxLen()
	beyond, inside, covered, unbounded := 0, 0, 0, 0
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			if st.Target == nil {
				continue
			}
			if st.Row >= trainRows {
				beyond++
				if st.M != 0 || !math.IsInf(st.Upper, 1) || !math.IsInf(st.Lower, -1) {
					t.Errorf("row %d past the training data: m %d, [%g, %g]", st.Row, st.M, st.Lower, st.Upper)
				}
				continue
			}
			inside++
			if math.IsInf(st.Upper-st.Lower, 0) {
				unbounded++
			}
			if st.Lower <= *st.Target && *st.Target <= st.Upper {
				covered++
			}
		}
	}
	s := res.Summary
	if beyond == 0 || s.Beyond == nil || s.Beyond.Labelled != beyond || s.Beyond.FromRow != trainRows || s.Beyond.TrainRows != trainRows {
		t.Fatalf("beyond: %+v, want %d labelled from row %d", s.Beyond, beyond, trainRows)
	}
	if s.Points != inside || math.Abs(s.Coverage-float64(covered)/float64(inside)) > 1e-12 {
		t.Errorf("pooled: %d points, coverage %g; want %d, %g", s.Points, s.Coverage, inside, float64(covered)/float64(inside))
	}
	if s.Infinite != unbounded {
		t.Errorf("%d unbounded intervals pooled, want the %d before the last training row", s.Infinite, unbounded)
	}
	for _, why := range res.Verdict.Reasons {
		if (why.Code == ManyUnbounded || why.Code == SomeUnbounded) && why.Count != unbounded {
			t.Errorf("the verdict counts the beyond-training intervals: %+v, want count %d", why, unbounded)
		}
	}
	found := false
	for _, why := range res.Verdict.Reasons {
		found = found || (why.Code == BeyondTraining && why.Count == beyond)
	}
	if !found {
		t.Errorf("no beyond-training reason with count %d: %+v", beyond, res.Verdict.Reasons)
	}
}

// TestFitAlternatives: the column check's alternatives reorder the
// features and shift the targets as the flags they print would.
func TestFitAlternatives(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	d := randomData(t, "train", g, graph.BatchFirst, 3, 0, 4, 5, 1)
	if len(d.Features) < 2 {
		t.Skip("the fixture has one feature")
	}
	perm := []int{1, 0}
	for i := 2; i < len(d.Features); i++ {
		perm = append(perm, i)
	}
	p := permuted(d, perm)
	if p.Features[0] != d.Features[1] || p.Seqs[0].X[2][0] != d.Seqs[0].X[2][1] || p.Seqs[0].X[2][1] != d.Seqs[0].X[2][0] {
		t.Errorf("permuted: %v, row %v from %v", p.Features, p.Seqs[0].X[2], d.Seqs[0].X[2])
	}
	s := shifted(d, 1)
	q := d.Seqs[0]
	if s.Seqs[0].Y[0][0] != q.Y[1][0] || s.Seqs[0].Y[q.Len()-1] != nil || s.Shift != 1 {
		t.Errorf("shift 1: row 0 target %v (want %v), last %v", s.Seqs[0].Y[0], q.Y[1], s.Seqs[0].Y[q.Len()-1])
	}
	back := shifted(s, 0)
	if back.Seqs[0].Y[1][0] != q.Y[1][0] || back.Seqs[0].Y[0] != nil {
		t.Errorf("shift 1 then 0: %v, %v", back.Seqs[0].Y[0], back.Seqs[0].Y[1])
	}
	if n := len(permutations(3)); n != 5 {
		t.Errorf("permutations of 3: %d, want 5", n)
	}
	if n := len(permutations(6)); n != 16 {
		t.Errorf("orders of 6 features tried: %d, want 15 exchanges and the reversed", n)
	}
}
