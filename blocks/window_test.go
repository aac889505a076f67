package blocks

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// series returns one series "A" of n rows, steps 1..n, feature and value
// y = 100+row, read with shift 1 (the last row has no target).
func series(t *testing.T, n int) *Dataset {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,t,y\n")
	for r := range n {
		b.WriteString("A," + formatStep(float64(r+1)) + "," + formatStep(float64(100+r)) + "\n")
	}
	return mustRead(t, "s.csv", b.String(), &Options{Features: []string{"y"}, Shift: 1})
}

// TestCutWindows checks the windows of a 10-row series, worked by hand:
// windows of 3 rows, stride 1, forecasting row lo+2's target (the value
// of row lo+3); row 9 has no target, so the last window starts at row 6.
func TestCutWindows(t *testing.T) {
	t.Parallel()
	d := series(t, 10)
	w, err := CutWindows(d, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() != 7 || w.Windows == nil || w.Windows.W != 3 || w.Windows.Len != 3 || w.Windows.Series != d {
		t.Fatalf("got %d windows, %+v", w.Len(), w.Windows)
	}
	for i, q := range w.Seqs {
		if q.Len() != 3 || q.X[0][0] != float64(100+i) || q.Y[2][0] != float64(103+i) || q.Context != 0 {
			t.Errorf("window %d: X %v Y %v", i, q.X, q.Y)
		}
		if want := "A@" + formatStep(float64(i+3)); q.ID != want {
			t.Errorf("window %d: id %q, want %q", i, q.ID, want)
		}
		if lo, hi := w.Windows.Rows(i); lo != i || hi != i+4 || w.Windows.Last(i) != i+2 {
			t.Errorf("window %d: rows [%d, %d), last %d", i, lo, hi, w.Windows.Last(i))
		}
	}
	// Two horizons: windows of 4 rows, the model reads the first 3; the
	// last window forecasts rows 8 and 9, of which row 8 has a target.
	w2, err := CutWindows(d, 3, 2)
	if err != nil || w2.Len() != 7 || w2.Windows.Len != 4 || w2.Seqs[0].ID != "A@3" {
		t.Fatalf("k = 2: %v, %d windows", err, w2.Len())
	}
	// A test series continuing the training series: one window per test
	// value, 4 (the targets of rows 9 to 12 of the 14; row 13 has none):
	// the first ends at the last training row, whose target, the first
	// test value, the test file's first row holds (Sequence.Head).
	test := mustRead(t, "u.csv", "id,t,y\nA,11,1\nA,12,2\nA,13,3\nA,14,4\n", &Options{Features: []string{"y"}, Shift: 1})
	tw, err := CutWindows(ContinueOrSelf(d, test), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, q := range tw.Seqs {
		ids = append(ids, q.ID)
	}
	if want := []string{"A@10", "A@11", "A@12", "A@13"}; !reflect.DeepEqual(ids, want) || tw.Seqs[0].X[0][0] != 107 || tw.Seqs[0].Y[2][0] != 1 || tw.Seqs[1].Y[2][0] != 2 {
		t.Errorf("test windows %v (want %v), first %v %v", ids, want, tw.Seqs[0].X, tw.Seqs[0].Y)
	}
	// A test series that starts two steps after the training series:
	// windows across the gap are refused.
	gap := mustRead(t, "g.csv", "id,t,y\nA,12,1\nA,13,2\n", &Options{Features: []string{"y"}, Shift: 1})
	if _, err := CutWindows(ContinueOrSelf(d, gap), 3, 1); err == nil || !strings.Contains(err.Error(), "series A of g.csv starts at step 12, and the training series it continues ends at step 10, its steps 1 apart") {
		t.Errorf("gap: %v", err)
	}
	for _, bad := range []struct{ w, k int }{{0, 1}, {3, 0}, {10, 1}} {
		if _, err := CutWindows(d, bad.w, bad.k); err == nil {
			t.Errorf("CutWindows(%d, %d): no error", bad.w, bad.k)
		}
	}
}

// TestSchemeWindows checks the window blocks of length 4 over the windows
// of TestCutWindows, worked by hand: window i reads rows i..i+2 and its
// target is row i+3's value, so it uses rows [i, i+4).
//
//	stretch [0, 4): region: last row i+2 in [0, 4), i = 0, 1;  deleted: i < 4
//	stretch [4, 8): region: i = 2..5;                         deleted: i+4 > 4 and i < 8, i = 1..6
//	stretch [8, 10): region: i = 6;                           deleted: i+4 > 8, i = 5, 6
func TestSchemeWindows(t *testing.T) {
	t.Parallel()
	w, err := CutWindows(series(t, 10), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := mustScheme(t, w, Windows, 4)
	want := []Block{
		{Kind: Windows, Seq: -1, Interval: -1, Lo: 0, Hi: 2, DelLo: 0, DelHi: 4, Label: "series 1 (id A) × steps 1–4 (t = 1–4)"},
		{Kind: Windows, Seq: -1, Interval: -1, Lo: 2, Hi: 6, DelLo: 1, DelHi: 7, Label: "series 1 (id A) × steps 5–8 (t = 5–8)"},
		{Kind: Windows, Seq: -1, Interval: -1, Lo: 6, Hi: 7, DelLo: 5, DelHi: 7, Label: "series 1 (id A) × steps 9–10 (t = 9–10)"},
	}
	if !reflect.DeepEqual(s.Blocks, want) || s.Kind != Windows || s.K != 4 || len(s.Notes) != 1 {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	b := s.Blocks[1]
	for i := range w.Len() {
		if got := b.Deletes(i, 2, 0); got != (i >= 1 && i <= 6) {
			t.Errorf("Deletes(window %d) = %v", i, got)
		}
		if got := b.InRegion(i, 2, 0); got != (i >= 2 && i <= 5) {
			t.Errorf("InRegion(window %d) = %v", i, got)
		}
	}
	if got := b.Deleted(w); len(got) != 6 || got[0] != (Span{Seq: 1, Lo: 0, Hi: 3}) {
		t.Errorf("Deleted = %v", got)
	}
	of := s.RegionOf()
	for i, want := range []int{0, 0, 1, 1, 1, 1, 2} {
		if got := of(i, 2); got != want {
			t.Errorf("RegionOf(window %d) = %d, want %d", i, got, want)
		}
	}
	// Every length, with a shift of 0 and two series of other lengths.
	two := mustRead(t, "two.csv", "id,t,x,y\nA,1,1,2\nA,2,2,3\nA,3,3,4\nA,4,4,5\nA,5,5,6\nB,1,7,8\nB,2,8,9\nB,3,9,1\n", nil)
	tw, err := CutWindows(two, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 6; k++ {
		checkScheme(t, tw, mustScheme(t, tw, Windows, k))
		checkScheme(t, w, mustScheme(t, w, Windows, k))
	}
	if _, err := NewScheme(series(t, 10), Windows, 4); err == nil {
		t.Error("window blocks over a dataset that is not windows: no error")
	}
}

func TestAutocorrelation(t *testing.T) {
	t.Parallel()
	// mean 2; centred -1 0 1 | 1 -1; c0 = 4, c1 = -1, c2 = -1.
	got := autocorrelation([][]float64{{1, 2, 3}, {3, 1}}, 5)
	if want := []float64{1, -0.25, -0.25}; !reflect.DeepEqual(got, want) {
		t.Errorf("autocorrelation = %v, want %v", got, want)
	}
}

// TestWindowBlockLength checks the block length on residuals without
// dependence (the window, 3 rows) and on residuals constant over runs of
// 4 (autocorrelation 3/4, 1/2, 1/4 at lags 1 to 3, about 0 after: the
// last significant lag is 3, the block 6 rows).
func TestWindowBlockLength(t *testing.T) {
	t.Parallel()
	w, err := CutWindows(series(t, 803), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	iid := make([]float64, w.Len())
	runs := make([]float64, w.Len())
	for i := range iid {
		iid[i] = rnd.NormFloat64()
		if i%4 == 0 {
			runs[i] = rnd.NormFloat64()
		} else {
			runs[i] = runs[i-1]
		}
	}
	if k, why := WindowBlockLength(w, iid); k != 3 || !strings.Contains(why, "twice the last lag at which the autocorrelation of the 800 in-sample residuals is significant (0: it stays within") {
		t.Errorf("independent residuals: block %d (%s)", k, why)
	}
	if k, why := WindowBlockLength(w, runs); k != 6 {
		t.Errorf("runs of 4: block %d, want 6 (%s)", k, why)
	}
	runs[5] = math.NaN()
	if k, _ := WindowBlockLength(w, runs[:5]); k != 100 {
		t.Errorf("5 residuals: block %d, want an eighth of 803 rows", k)
	}
}
