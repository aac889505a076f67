package blocks

import (
	"slices"
	"testing"
)

// TestContinue: a test sequence with a training id whose first step
// follows that sequence's last is preceded by its rows (Context = their
// number); one whose steps overlap the training steps, and one with a
// new id, are left as they are.
func TestContinue(t *testing.T) {
	seq := func(id string, steps ...float64) *Sequence {
		s := &Sequence{ID: id, Steps: steps}
		for _, v := range steps {
			s.X = append(s.X, []float64{v * 10})
			s.Y = append(s.Y, []float64{v})
		}
		return s
	}
	train := &Dataset{File: "train.csv", Targets: []string{"y"}, Seqs: []*Sequence{seq("a", 1, 2, 3), seq("b", 1, 2, 3)}}
	test := &Dataset{File: "test.csv", Targets: []string{"y"}, Seqs: []*Sequence{seq("a", 4, 5), seq("b", 3, 4), seq("c", 9)}}
	got, ids := Continue(train, test)
	if !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("continued %v, want [a]", ids)
	}
	a := got.Seqs[0]
	if a.Context != 3 || !slices.Equal(a.Steps, []float64{1, 2, 3, 4, 5}) || a.X[3][0] != 40 || a.Y[0][0] != 1 || a.Y[4][0] != 5 {
		t.Errorf("a: context %d, steps %v, x %v, y %v", a.Context, a.Steps, a.X, a.Y)
	}
	if got.Seqs[1] != test.Seqs[1] || got.Seqs[2] != test.Seqs[2] {
		t.Error("b (overlapping steps) or c (a new id) was changed")
	}
	if test.Seqs[0].Context != 0 || len(test.Seqs[0].Steps) != 2 || len(train.Seqs[0].Steps) != 3 {
		t.Error("the inputs were modified")
	}
	if same, ids := Continue(train, &Dataset{Seqs: []*Sequence{seq("c", 1)}}); ids != nil || same.Seqs[0].ID != "c" {
		t.Error("a test set that continues nothing was changed")
	}
}
