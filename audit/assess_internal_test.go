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
