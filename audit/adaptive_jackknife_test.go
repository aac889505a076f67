package audit

import (
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// TestLabelDelayChains: with a label delay of 2 rows a horizon-0
// forecast made at row r is labelled at row r+2; pooled, the steps go on
// past a sequence's end at its last spacing.
func TestLabelDelayChains(t *testing.T) {
	t.Parallel()
	// Two windows of one series, steps 10, 11, 12 and 13, 14, 15.
	p := &problem{eval: &blocks.Dataset{Seqs: []*blocks.Sequence{{Steps: []float64{10, 11, 12}}, {Steps: []float64{13, 14, 15}}}}}
	var pts []point
	for s := range 2 {
		for r := range 3 {
			pts = append(pts, point{seq: s, f: forecast{T: r}, has: true})
		}
	}
	chs := adaptiveChains(p, pts, true, 2)
	if len(chs) != 1 {
		t.Fatalf("%d chains, want 1", len(chs))
	}
	wantTime := []float64{10, 11, 12, 13, 14, 15}
	wantArrival := []float64{12, 13, 14, 15, 16, 17}
	if !slices.Equal(chs[0].Time, wantTime) || !slices.Equal(chs[0].Arrival, wantArrival) {
		t.Errorf("times %v arrivals %v, want %v and %v", chs[0].Time, chs[0].Arrival, wantTime, wantArrival)
	}
	chs = adaptiveChains(p, pts, false, 2)
	if len(chs) != 2 || !slices.Equal(chs[1].Arrival, []float64{2, 3, 4}) {
		t.Errorf("per sequence: %+v", chs)
	}
}
