package blocks

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// grid returns a dataset of sequences P1, P2, ... of the given lengths,
// with steps 0, 1, 2, ... and a target on every row.
func grid(lengths ...int) *Dataset {
	d := &Dataset{File: "grid.csv", IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}}
	for i, n := range lengths {
		s := &Sequence{ID: fmt.Sprintf("P%d", i+1)}
		for r := range n {
			s.Steps = append(s.Steps, float64(r))
			s.X = append(s.X, []float64{float64(r)})
			s.Y = append(s.Y, []float64{float64(10*i + r)})
		}
		d.Seqs = append(d.Seqs, s)
	}
	return d
}

func mustScheme(t *testing.T, d *Dataset, kind Kind, k int) *Scheme {
	t.Helper()
	s, err := NewScheme(d, kind, k)
	if err != nil {
		t.Fatalf("NewScheme(%v, %d): %v", kind, k, err)
	}
	checkScheme(t, d, s)
	return s
}

func TestSchemeSequences(t *testing.T) {
	t.Parallel()
	d := grid(5, 3, 7)
	s := mustScheme(t, d, Sequences, 4) // k is ignored
	want := &Scheme{Requested: Sequences, Kind: Sequences, Blocks: []Block{
		{Kind: Sequences, Seq: 0, Interval: -1, Label: "sequence 1 (id P1)"},
		{Kind: Sequences, Seq: 1, Interval: -1, Label: "sequence 2 (id P2)"},
		{Kind: Sequences, Seq: 2, Interval: -1, Label: "sequence 3 (id P3)"},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	b := s.Blocks[1]
	for _, tc := range []struct {
		i, t, h int
		want    bool
	}{
		{1, 0, 0, true}, {1, 2, 0, true}, {1, 1, 1, true}, {0, 0, 0, false}, {2, 2, 0, false},
	} {
		if got := b.Deletes(tc.i, tc.t, tc.h); got != tc.want {
			t.Errorf("Deletes(%d, %d, %d) = %v, want %v", tc.i, tc.t, tc.h, got, tc.want)
		}
		if got := b.InRegion(tc.i, tc.t, tc.h); got != tc.want {
			t.Errorf("InRegion(%d, %d, %d) = %v, want %v", tc.i, tc.t, tc.h, got, tc.want)
		}
	}
	wantSpans := []Span{{Seq: 1, Lo: 0, Hi: 3}}
	if got := b.Deleted(d); !reflect.DeepEqual(got, wantSpans) {
		t.Errorf("Deleted = %v, want %v", got, wantSpans)
	}
	if got := b.Region(d); !reflect.DeepEqual(got, wantSpans) {
		t.Errorf("Region = %v, want %v", got, wantSpans)
	}
}

func TestSchemeIntervals(t *testing.T) {
	t.Parallel()
	d := grid(5, 3, 7)
	s := mustScheme(t, d, Intervals, 3)
	want := &Scheme{Requested: Intervals, Kind: Intervals, K: 3, Blocks: []Block{
		{Kind: Intervals, Seq: -1, Interval: 0, Lo: 0, Hi: 3, Label: "steps 1–3 (t = 0–2)"},
		{Kind: Intervals, Seq: -1, Interval: 1, Lo: 3, Hi: 6, Label: "steps 4–6 (t = 3–5)"},
		{Kind: Intervals, Seq: -1, Interval: 2, Lo: 6, Hi: 7, Label: "step 7 (t = 6)"},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	b := s.Blocks[1]
	// Membership is by the target row t+h.
	for _, tc := range []struct {
		i, t, h int
		want    bool
	}{
		{0, 3, 0, true},
		{0, 2, 1, true},  // forecast made at row 2 of the value of row 3
		{2, 1, 4, true},  // row 5
		{2, 5, 1, false}, // row 6, the next interval
		{0, 2, 0, false},
		{1, 3, 0, true}, // Deletes does not know that sequence 2 has 3 rows
	} {
		if got := b.Deletes(tc.i, tc.t, tc.h); got != tc.want {
			t.Errorf("Deletes(%d, %d, %d) = %v, want %v", tc.i, tc.t, tc.h, got, tc.want)
		}
		if got := b.InRegion(tc.i, tc.t, tc.h); got != tc.want {
			t.Errorf("InRegion(%d, %d, %d) = %v, want %v", tc.i, tc.t, tc.h, got, tc.want)
		}
	}
	wantSpans := []Span{{Seq: 0, Lo: 3, Hi: 5}, {Seq: 2, Lo: 3, Hi: 6}}
	if got := b.Deleted(d); !reflect.DeepEqual(got, wantSpans) {
		t.Errorf("Deleted = %v, want %v", got, wantSpans)
	}
	if got := b.Region(d); !reflect.DeepEqual(got, wantSpans) {
		t.Errorf("Region = %v, want %v", got, wantSpans)
	}
}

func TestSchemeNested(t *testing.T) {
	t.Parallel()
	d := grid(5, 3, 7)
	s := mustScheme(t, d, Nested, 3)
	type ij struct{ i, j int }
	var got []ij
	for _, b := range s.Blocks {
		got = append(got, ij{b.Seq, b.Interval})
	}
	// Sequence 2 (3 rows) has no row in intervals 1 and 2, sequence 1 (5
	// rows) none in interval 2.
	want := []ij{{0, 0}, {0, 1}, {1, 0}, {2, 0}, {2, 1}, {2, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks %v, want %v", got, want)
	}
	if s.Kind != Nested || s.Requested != Nested || s.Degenerate || s.K != 3 {
		t.Errorf("scheme %+v", s)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "3 of 9 nested blocks have no target") {
		t.Errorf("notes %q", s.Notes)
	}
	b := s.Blocks[1] // sequence 1 × interval 1
	if want := "sequence 1 (id P1) × steps 4–6 (t = 3–5)"; b.Label != want || b.String() != want {
		t.Errorf("label %q, want %q", b.Label, want)
	}
	for _, tc := range []struct {
		i, t, h           int
		deletes, inRegion bool
	}{
		{0, 0, 0, true, false}, // its sequence, outside the interval
		{0, 4, 0, true, true},  // both
		{0, 2, 1, true, true},  // row 3
		{2, 4, 0, true, false}, // the interval in another sequence
		{2, 0, 0, false, false},
		{1, 2, 0, false, false},
	} {
		if got := b.Deletes(tc.i, tc.t, tc.h); got != tc.deletes {
			t.Errorf("Deletes(%d, %d, %d) = %v, want %v", tc.i, tc.t, tc.h, got, tc.deletes)
		}
		if got := b.InRegion(tc.i, tc.t, tc.h); got != tc.inRegion {
			t.Errorf("InRegion(%d, %d, %d) = %v, want %v", tc.i, tc.t, tc.h, got, tc.inRegion)
		}
	}
	if got, want := b.Deleted(d), []Span{{0, 0, 5}, {2, 3, 6}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Deleted = %v, want %v", got, want)
	}
	if got, want := b.Region(d), []Span{{0, 3, 5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Region = %v, want %v", got, want)
	}
}

func TestSchemeDegenerate(t *testing.T) {
	t.Parallel()
	d := grid(5, 3, 7)
	for _, tc := range []struct {
		kind       Kind
		k          int
		degenerate bool
		blocks     int
	}{
		{Intervals, 1, false, 7},
		{Intervals, 6, false, 2},
		{Intervals, 7, true, 3},
		{Intervals, 8, true, 3},
		{Intervals, 1000, true, 3},
		{Nested, 6, false, 4}, // (0,0) (1,0) (2,0) (2,1)
		{Nested, 7, true, 3},
		{Nested, 50, true, 3},
	} {
		s := mustScheme(t, d, tc.kind, tc.k)
		if s.Degenerate != tc.degenerate || len(s.Blocks) != tc.blocks || s.Requested != tc.kind || s.K != tc.k {
			t.Errorf("%v, K=%d: degenerate %v with %d blocks, requested %v, K %d; want degenerate %v with %d blocks",
				tc.kind, tc.k, s.Degenerate, len(s.Blocks), s.Requested, s.K, tc.degenerate, tc.blocks)
		}
		if !tc.degenerate {
			if s.Kind != tc.kind {
				t.Errorf("%v, K=%d: kind %v", tc.kind, tc.k, s.Kind)
			}
			continue
		}
		if s.Kind != Sequences || s.Blocks[2].Kind != Sequences || s.Blocks[2].Seq != 2 {
			t.Errorf("%v, K=%d: kind %v, blocks %v; want sequence blocks", tc.kind, tc.k, s.Kind, s.Blocks)
		}
		want := fmt.Sprintf("interval length %d is at least the length of the longest sequence (7 steps): the %v scheme would delete the whole training set, so sequence blocks are used instead", tc.k, tc.kind)
		if len(s.Notes) != 1 || s.Notes[0] != want {
			t.Errorf("%v, K=%d: notes %q, want %q", tc.kind, tc.k, s.Notes, want)
		}
	}
}

func TestSchemeShiftedTargets(t *testing.T) {
	t.Parallel()
	// Shift 1 leaves the last row of each sequence without a target.
	d := mustRead(t, "f.csv", "id,t,y\na,0,1\na,1,2\na,2,3\na,3,4\nb,0,5\nb,1,6\nb,2,7\nb,3,8\n",
		&Options{Features: []string{"y"}, Shift: 1})
	s := mustScheme(t, d, Intervals, 3) // [0,3) holds targets, [3,4) none
	if !s.Degenerate || s.Kind != Sequences || len(s.Blocks) != 2 {
		t.Errorf("scheme %+v: want a fallback to 2 sequence blocks", s)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "only 1 of 2 intervals hold a target (shift 1)") {
		t.Errorf("notes %q", s.Notes)
	}
	s = mustScheme(t, d, Intervals, 2)
	if s.Degenerate || len(s.Blocks) != 2 || len(s.Notes) != 0 {
		t.Errorf("scheme %+v: want 2 interval blocks", s)
	}

	// A sequence of one row has no target, an interval past the last
	// target has no block.
	d = mustRead(t, "f.csv", "id,t,y\na,0,1\na,1,2\na,2,3\na,3,4\na,4,5\na,5,6\na,6,7\nb,0,5\n",
		&Options{Features: []string{"y"}, Shift: 1})
	s = mustScheme(t, d, Sequences, 0)
	if len(s.Blocks) != 1 || s.Blocks[0].Seq != 0 {
		t.Errorf("blocks %v, want sequence 0 only", s.Blocks)
	}
	if want := "1 sequence has no target and no block: sequence 2 (id b)"; len(s.Notes) != 1 || s.Notes[0] != want {
		t.Errorf("notes %q, want %q", s.Notes, want)
	}
	s = mustScheme(t, d, Intervals, 3) // [0,3) [3,6) [6,7): the last holds no target
	if len(s.Blocks) != 2 || s.Degenerate {
		t.Errorf("blocks %v, want 2 interval blocks", s.Blocks)
	}
	if want := "1 of 3 intervals hold no target (shift 1) and have no block"; len(s.Notes) != 1 || s.Notes[0] != want {
		t.Errorf("notes %q, want %q", s.Notes, want)
	}
}

func TestSchemeErrors(t *testing.T) {
	t.Parallel()
	unlabelled := mustRead(t, "test.csv", "id,t,x\na,0,1\na,1,2\n", &Options{OptionalTargets: true})
	noTargets := mustRead(t, "f.csv", "id,t,y\na,0,1\na,1,2\n", &Options{Features: []string{"y"}, Shift: 5})
	for _, tc := range []struct {
		name string
		d    *Dataset
		kind Kind
		k    int
		msg  string
	}{
		{"unlabelled", unlabelled, Sequences, 0, "blocks: test.csv has no target columns"},
		{"zero length", grid(3), Intervals, 0, "blocks: interval length 0: it must be at least 1"},
		{"negative length", grid(3), Nested, -2, "interval length -2"},
		{"unknown kind", grid(3), Kind(7), 2, "unknown block scheme Kind(7)"},
		{"no target", noTargets, Sequences, 0, "no row of f.csv has a target (shift 5)"},
	} {
		s, err := NewScheme(tc.d, tc.kind, tc.k)
		if err == nil || !errors.Is(err, ErrScheme) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: NewScheme = %v, %v; want an error wrapping ErrScheme that says %q", tc.name, s, err, tc.msg)
		}
	}
}

func TestIntervalLabels(t *testing.T) {
	t.Parallel()
	d := grid(4, 2)
	d.Seqs[1].Steps = []float64{0, 10} // agrees with P1 on row 0 only
	d.Seqs[0].Steps = []float64{0, 1, 2.5, 4}
	s := mustScheme(t, d, Intervals, 2)
	var got []string
	for _, b := range s.Blocks {
		got = append(got, b.Label)
	}
	want := []string{"steps 1–2", "steps 3–4 (t = 2.5–4)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
	for _, tc := range []struct {
		b    Block
		want string
	}{
		{Block{}, "sequence 1"},
		{Block{Kind: Intervals, Lo: 3, Hi: 6}, "steps 4–6"},
		{Block{Kind: Intervals, Lo: 3, Hi: 4}, "step 4"},
		{Block{Kind: Nested, Seq: 4, Lo: 0, Hi: 2}, "sequence 5 × steps 1–2"},
		{Block{Kind: Nested, Seq: 4, Label: "mine"}, "mine"},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("%+v: String() = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want Kind
		ok   bool
	}{
		{"sequence", Sequences, true},
		{" Sequences ", Sequences, true},
		{"interval", Intervals, true},
		{"INTERVALS", Intervals, true},
		{"nested", Nested, true},
		{"", 0, false},
		{"blocks", 0, false},
	} {
		got, err := ParseKind(tc.s)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKind(%q) = %v, %v; want %v, ok %v", tc.s, got, err, tc.want, tc.ok)
		}
		if err != nil && (!errors.Is(err, ErrScheme) || !strings.Contains(err.Error(), "choose sequence, interval or nested")) {
			t.Errorf("ParseKind(%q): error %v", tc.s, err)
		}
		if tc.ok {
			if back, err := ParseKind(got.String()); err != nil || back != got {
				t.Errorf("ParseKind(%v.String()) = %v, %v", got, back, err)
			}
		}
	}
}

// TestSchemeProperties checks, on datasets of several shapes, that spans
// and predicates agree, that membership depends on t+h only, and that the
// evaluation regions of a scheme partition the rows with a target.
func TestSchemeProperties(t *testing.T) {
	t.Parallel()
	shifted := mustRead(t, "f.csv", "id,t,y\na,0,1\na,1,2\na,2,3\nb,0,5\nb,1,6\nc,5,1\nc,7,2\nc,9,3\nc,11,4\nc,13,5\n",
		&Options{Features: []string{"y"}, Shift: 1})
	for _, d := range []*Dataset{grid(1), grid(5, 3, 7), grid(2, 2, 2, 2), grid(9, 1, 4), shifted} {
		for _, kind := range []Kind{Sequences, Intervals, Nested} {
			for k := 1; k <= 10; k++ {
				s := mustScheme(t, d, kind, k)
				checkScheme(t, d, s)
			}
		}
	}
}

// checkScheme checks the invariants of a scheme built by NewScheme.
func checkScheme(t *testing.T, d *Dataset, s *Scheme) {
	t.Helper()
	name := fmt.Sprintf("%v K=%d on %d sequences", s.Requested, s.K, d.Len())
	if s.Kind != s.Requested && (!s.Degenerate || s.Kind != Sequences) {
		t.Errorf("%s: kind %v, requested %v, degenerate %v", name, s.Kind, s.Requested, s.Degenerate)
	}
	if s.Degenerate && len(s.Notes) == 0 {
		t.Errorf("%s: degenerate without a note", name)
	}
	covered := map[[2]int]int{} // (i, r) -> number of regions holding it
	for _, b := range s.Blocks {
		if b.Kind != s.Kind {
			t.Errorf("%s: block %v of kind %v", name, b, b.Kind)
		}
		inSpans := func(spans []Span) map[[2]int]bool {
			set := map[[2]int]bool{}
			for j, sp := range spans {
				if sp.Lo >= sp.Hi || sp.Lo < 0 || sp.Hi > d.Seqs[sp.Seq].Len() || (j > 0 && spans[j-1].Seq >= sp.Seq) {
					t.Errorf("%s: block %v: bad spans %v", name, b, spans)
				}
				for r := sp.Lo; r < sp.Hi; r++ {
					set[[2]int{sp.Seq, r}] = true
				}
			}
			return set
		}
		del, reg := inSpans(b.Deleted(d)), inSpans(b.Region(d))
		targets := 0
		for i, q := range d.Seqs {
			for r := range q.Len() {
				key := [2]int{i, r}
				if del[key] != b.Deletes(i, r, 0) || reg[key] != b.InRegion(i, r, 0) {
					t.Errorf("%s: block %v row (%d, %d): spans say deleted %v, region %v; predicates %v, %v",
						name, b, i, r, del[key], reg[key], b.Deletes(i, r, 0), b.InRegion(i, r, 0))
				}
				if reg[key] && !del[key] {
					t.Errorf("%s: block %v: row (%d, %d) in the region but not deleted", name, b, i, r)
				}
				for h := 1; h <= r; h++ {
					if b.Deletes(i, r-h, h) != del[key] || b.InRegion(i, r-h, h) != reg[key] {
						t.Errorf("%s: block %v: term (%d, %d, %d) not decided by its target row", name, b, i, r-h, h)
					}
				}
				if reg[key] && q.HasTarget(r) {
					targets++
					covered[key]++
				}
			}
		}
		if targets == 0 {
			t.Errorf("%s: block %v has no target in its region", name, b)
		}
	}
	for i, q := range d.Seqs {
		for r := range q.Len() {
			if got := covered[[2]int{i, r}]; q.HasTarget(r) && got != 1 {
				t.Errorf("%s: row (%d, %d) has a target and is in %d evaluation regions, want 1", name, i, r, got)
			}
		}
	}
}

func BenchmarkNewScheme(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		lengths := make([]int, n)
		for i := range lengths {
			lengths[i] = 20 + i%30
		}
		d := grid(lengths...)
		b.Run(fmt.Sprintf("nested/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewScheme(d, Nested, 5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
