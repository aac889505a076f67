package datacheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// windowFile returns, as a data set read from CSV, the windows of n rows,
// every stride rows, of the series v_r = r*r % 17 (r = 0..19), one
// sequence per window with steps 1..n, feature x = v and target y the
// next value.
func windowFile(t *testing.T, n, stride int) *blocks.Dataset {
	t.Helper()
	v := func(r int) int { return r * r % 17 }
	var b strings.Builder
	b.WriteString("id,t,x,y\n")
	for lo := 0; lo+n < 20; lo += stride {
		for k := range n {
			fmt.Fprintf(&b, "w%d,%d,%d,%d\n", lo+1, k+1, v(lo+k), v(lo+k+1))
		}
	}
	d, err := blocks.Read(strings.NewReader(b.String()), "win.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDetectWindowed checks the evidence on windows of 5 rows of a
// 20-row series (15 windows at stride 1, 8 at stride 2: every pair after
// the first repeats its predecessor from row 1 or 2 on), and that
// independent sequences, and windows that do not overlap, give none.
func TestDetectWindowed(t *testing.T) {
	t.Parallel()
	w := DetectWindowed(windowFile(t, 5, 1))
	want := Windowed{Repeats: 14, Pairs: 14, Stride: 1, Len: 5, First: "w1", Second: "w2", NextValue: "x"}
	if w == nil || *w != want {
		t.Fatalf("stride 1: %+v, want %+v", w, want)
	}
	if text := w.Text("win.csv"); !strings.Contains(text, `14 of 15 sequences`) || !strings.Contains(text, `from its row 2 on is the start of sequence "w2"`) {
		t.Errorf("text: %s", text)
	}
	w = DetectWindowed(windowFile(t, 5, 2))
	if want := (Windowed{Repeats: 7, Pairs: 7, Stride: 2, Len: 5, First: "w1", Second: "w3", NextValue: "x"}); w == nil || *w != want {
		t.Errorf("stride 2: %+v, want %+v", w, want)
	}
	if w := DetectWindowed(windowFile(t, 5, 5)); w != nil {
		t.Errorf("windows that do not overlap: %+v", w)
	}
	if w := DetectWindowed(windowFile(t, 5, 3)); w != nil {
		t.Errorf("windows overlapping on 2 of 5 rows (less than half): %+v", w)
	}
	indep, err := blocks.Read(strings.NewReader("id,t,x,y\na,1,1,2\na,2,2,3\nb,1,5,1\nb,2,1,1\nc,1,2,2\nc,2,3,4\nd,1,0,0\nd,2,9,9\n"), "ind.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := DetectWindowed(indep); w != nil {
		t.Errorf("independent sequences: %+v", w)
	}
}
