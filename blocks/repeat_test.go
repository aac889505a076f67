package blocks

import (
	"slices"
	"testing"
)

// TestRepeats: a sequence with another's steps and features repeats it
// whatever its id and targets; one with only an id in common repeats it
// by id when asked; a step or a feature apart is another sequence; the
// first of two identical sequences is the one named.
func TestRepeats(t *testing.T) {
	seq := func(id string, x float64, steps ...float64) *Sequence {
		s := &Sequence{ID: id, Steps: steps}
		for _, v := range steps {
			s.X = append(s.X, []float64{v * x})
			s.Y = append(s.Y, []float64{v + x})
		}
		return s
	}
	other := &Dataset{Seqs: []*Sequence{seq("a", 1, 1, 2), seq("b", 2, 1, 2), seq("b2", 2, 1, 2)}}
	d := &Dataset{Seqs: []*Sequence{
		seq("n", 3, 1, 2), // new
		seq("z", 2, 1, 2), // b's rows
		seq("a", 5, 1, 2), // a's id, other rows
		seq("m", 1, 1, 3), // another step
	}}
	d.Seqs[1].Y = nil // targets do not count
	if got, want := Repeats(d, other, true), []Repeat{{Seq: 1, Other: 1}, {Seq: 2, Other: 0, SameID: true}}; !slices.Equal(got, want) {
		t.Errorf("by id: %v, want %v", got, want)
	}
	if got, want := Repeats(d, other, false), []Repeat{{Seq: 1, Other: 1}}; !slices.Equal(got, want) {
		t.Errorf("by content: %v, want %v", got, want)
	}
	if got := Repeats(&Dataset{}, other, true); got != nil {
		t.Errorf("empty: %v", got)
	}
}
