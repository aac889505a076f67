package artifact

import (
	"math"
	"reflect"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// TestTraining checks that Sequences rebuilds the sequences TrainingOf
// flattened, and refuses lists that disagree with one message each.
func TestTraining(t *testing.T) {
	d := &blocks.Dataset{Features: []string{"a", "b"}, Seqs: []*blocks.Sequence{
		{ID: "s1", Steps: []float64{0, 1}, X: [][]float64{{1, 2}, {3, 4}}},
		{ID: "s2", Steps: []float64{5}, X: [][]float64{{6, 7}}},
	}}
	c := TrainingOf(d)
	if !reflect.DeepEqual(c, &Training{IDs: []string{"s1", "s2"}, Lens: []int{2, 1}, Steps: []float64{0, 1, 5}, X: []float64{1, 2, 3, 4, 6, 7}}) {
		t.Fatalf("TrainingOf: %+v", c)
	}
	seqs, err := c.Sequences(2)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		w := d.Seqs[i]
		if s.ID != w.ID || !reflect.DeepEqual(s.Steps, w.Steps) || !reflect.DeepEqual(s.X, w.X) {
			t.Errorf("sequence %d: %+v, want %+v", i, s, w)
		}
	}
	if TrainingOf(&blocks.Dataset{}) != nil || TrainingOf(nil) != nil {
		t.Error("TrainingOf of no sequences is not nil")
	}
	for _, c := range []struct {
		c    Training
		want string
	}{
		{Training{IDs: []string{"a"}, Lens: []int{-1}}, "a training sequence of -1 rows: the file is damaged"},
		{Training{IDs: []string{"a"}, Lens: []int{1}, Steps: []float64{0}, X: []float64{1}}, "training rows: 1 ids, 1 lengths, 1 steps and 1 values for 1 rows of 2 features: the file is damaged"},
		{Training{IDs: []string{"a", "b"}, Lens: []int{1}, Steps: []float64{0}, X: []float64{1, 2}}, "training rows: 2 ids, 1 lengths, 1 steps and 2 values for 1 rows of 2 features: the file is damaged"},
		{Training{IDs: []string{"a", "b"}, Lens: []int{math.MaxInt, 2}, Steps: []float64{0}, X: []float64{1, 2}}, "a training sequence of 9223372036854775807 rows: the file is damaged"},
		{Training{IDs: []string{"a"}, Lens: []int{1}, Steps: []float64{0}, X: []float64{1, math.NaN()}}, "training rows hold a value that is not finite: the file is damaged"},
		{Training{IDs: []string{"a"}, Lens: []int{1}, Steps: []float64{math.Inf(1)}, X: []float64{1, 2}}, "training rows hold a value that is not finite: the file is damaged"},
	} {
		if _, err := c.c.Sequences(2); err == nil || err.Error() != c.want {
			t.Errorf("%+v: error %v, want %q", c.c, err, c.want)
		}
	}
}
