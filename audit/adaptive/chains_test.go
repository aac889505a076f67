package adaptive

import (
	"slices"
	"testing"
)

// TestChains groups six forecasts by hand: windows of series 0 made at
// rows 7, 5 and 6 (horizon 0) and one at row 5 for horizon 1, and windows
// of series 1 at rows 5 and 4. Chains, in order of first appearance:
// series 0 horizon 0 in time order (points 1, 2, 0), series 0 horizon 1
// (point 3), series 1 (points 5, 4); times and arrivals follow the
// points.
func TestChains(t *testing.T) {
	t.Parallel()
	ts := []Timed{
		{Series: 0, Time: 7, Arrival: 7},
		{Series: 0, Time: 5, Arrival: 5},
		{Series: 0, Time: 6, Arrival: 6},
		{Series: 0, Horizon: 1, Time: 5, Arrival: 6},
		{Series: 1, Time: 5, Arrival: 5},
		{Series: 1, Time: 4, Arrival: 4},
	}
	got := Chains(ts)
	want := []Chain{
		{Points: []int{1, 2, 0}, Time: []float64{5, 6, 7}, Arrival: []float64{5, 6, 7}},
		{Points: []int{3}, Time: []float64{5}, Arrival: []float64{6}},
		{Points: []int{5, 4}, Time: []float64{4, 5}, Arrival: []float64{4, 5}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d chains, want %d: %+v", len(got), len(want), got)
	}
	for c := range want {
		if !slices.Equal(got[c].Points, want[c].Points) || !slices.Equal(got[c].Time, want[c].Time) || !slices.Equal(got[c].Arrival, want[c].Arrival) {
			t.Errorf("chain %d: %+v, want %+v", c, got[c], want[c])
		}
	}
	// Pooled (one series -1): ties at time 5 go by Tie, then index.
	for i := range ts {
		ts[i].Series, ts[i].Horizon, ts[i].Tie = -1, 0, 1-i%2
	}
	if got := Chains(ts); len(got) != 1 || !slices.Equal(got[0].Points, []int{5, 1, 3, 4, 2, 0}) {
		t.Errorf("pooled: %+v, want one chain of points 5 1 3 4 2 0", got)
	}
}
