package blocks

import (
	"slices"
	"strings"
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

// TestContinueThrough reads one series in three files with shift 1
// (training steps 1-4, a calibration stretch 5-6, test 7-8; y = 10 t):
// the files' first rows keep their own targets (Head), so that the last
// training row of the continued calibration series has the target 50 (the
// first calibration value) and the last calibration row of the continued
// test series 70; the test series continues training and calibration
// (context 6 rows). A test series with an id only in training continues
// training alone. Cut into windows of 2 rows, the calibration stretch
// gives one window per calibration value, 2, the first ending at the last
// training row; the test period one per labelled test value, 1 (step 8
// has no next value).
func TestContinueThrough(t *testing.T) {
	read := func(name, body string) *Dataset {
		d, err := Read(strings.NewReader(body), name, &Options{Features: []string{"y"}, Shift: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	train := read("train.csv", "id,t,y\na,1,10\na,2,20\na,3,30\na,4,40\nb,1,1\nb,2,2\n")
	cal := read("cal.csv", "id,t,y\na,5,50\na,6,60\n")
	test := read("test.csv", "id,t,y\na,7,70\na,8,80\nb,3,3\n")
	if h := cal.Seqs[0].Head; len(h) != 1 || h[0][0] != 50 {
		t.Fatalf("calibration head %v, want [[50]]", h)
	}
	lc, tc := ContinueThrough(train, cal, test)
	c := lc.Seqs[0]
	if c.Context != 4 || c.Len() != 6 || c.Y[3] == nil || c.Y[3][0] != 50 || c.Y[4][0] != 60 || c.Y[5] != nil {
		t.Errorf("calibration: context %d, %d rows, targets %v", c.Context, c.Len(), c.Y)
	}
	a, b := tc.Seqs[0], tc.Seqs[1]
	if a.Context != 6 || !slices.Equal(a.Steps, []float64{1, 2, 3, 4, 5, 6, 7, 8}) || a.Y[3][0] != 50 || a.Y[5][0] != 70 || a.Y[6][0] != 80 {
		t.Errorf("test a: context %d, steps %v, targets %v", a.Context, a.Steps, a.Y)
	}
	if b.Context != 2 || b.Len() != 3 || b.Y[1][0] != 3 {
		t.Errorf("test b: context %d, %d rows, targets %v", b.Context, b.Len(), b.Y)
	}
	cw, err := CutWindows(lc, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cw.Seqs) != 2 || cw.Seqs[0].ID != "a@4" || cw.Seqs[1].ID != "a@5" {
		t.Errorf("calibration windows %v, want a@4 and a@5", ids(cw))
	}
	tw, err := CutWindows(tc, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(tw); !slices.Equal(got, []string{"a@6", "a@7", "b@2"}) {
		t.Errorf("test windows %v, want a@6 a@7 b@2", got)
	}
	if _, nilTest := ContinueThrough(train, cal, nil); nilTest != nil {
		t.Error("a nil test set came back continued")
	}
	if nilCal, tc := ContinueThrough(train, nil, test); nilCal != nil || tc.Seqs[0].Context != 4 {
		t.Errorf("without a later stretch: %v, test context %d, want nil and 4 (Continue's)", nilCal, tc.Seqs[0].Context)
	}
}

// ids lists the ids of d's sequences.
func ids(d *Dataset) []string {
	var out []string
	for _, s := range d.Seqs {
		out = append(out, s.ID)
	}
	return out
}
