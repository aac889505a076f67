package adaptive

import (
	"cmp"
	"slices"
)

// Timed is a forecast's place in time, from which Chains builds the
// series the adaptive state runs along.
type Timed struct {
	// Series and Horizon name the chain: the forecasts of one series
	// (a test sequence; every window cut from one long series; -1 for
	// all sequences pooled) at one horizon form one chain.
	Series, Horizon int
	// Time is when the forecast is made (its row, or its step value
	// when sequences are pooled), Arrival when its label arrives (row +
	// horizon + label delay, in the same units).
	Time, Arrival float64
	// Tie orders forecasts made at the same time (the sequence index).
	Tie int
}

// Chains groups the forecasts ts into chains, one per (Series, Horizon)
// in order of first appearance, each ordered by Time, then Tie, then
// index: forecast i of ts is Points' i. The windows of one series, each
// a sequence of one forecast, thereby become one chain along the
// series' time, so that ACI and AgACI update from each labelled window's
// forecast to the next.
func Chains(ts []Timed) []Chain {
	type key struct{ series, h int }
	idx := map[key]int{}
	var out []Chain
	for i, t := range ts {
		k := key{t.Series, t.Horizon}
		c, ok := idx[k]
		if !ok {
			c = len(out)
			idx[k] = c
			out = append(out, Chain{})
		}
		out[c].Points = append(out[c].Points, i)
	}
	for c := range out {
		ch := &out[c]
		slices.SortStableFunc(ch.Points, func(a, b int) int {
			return cmp.Or(cmp.Compare(ts[a].Time, ts[b].Time), cmp.Compare(ts[a].Tie, ts[b].Tie))
		})
		for _, i := range ch.Points {
			ch.Time = append(ch.Time, ts[i].Time)
			ch.Arrival = append(ch.Arrival, ts[i].Arrival)
		}
	}
	return out
}
