package audit

import "fmt"

// Under-coverage per series of the adaptive kinds (issue 23 item 4: which
// of several series under-covers, and whether its coverage drifts). The
// kinds' figures pool every series; a series that under-covers by more
// than its dependence-aware tolerance is listed in the kind's Under,
// with the coverage of its first and last thirds (thirds), which the
// reports name.

// seriesHits are the 0/1 coverage values of one kind along each chain's
// labelled forecasts, in time order.
func seriesHits(pts []point, chains []chain, lo, up []float64, empty []bool) [][]float64 {
	out := make([][]float64, len(chains))
	for c, ch := range chains {
		for _, i := range ch.pts {
			if !pts[i].has {
				continue
			}
			in := lo[i] <= pts[i].y && pts[i].y <= up[i] && (empty == nil || !empty[i])
			out[c] = append(out[c], float64(b2i(in)))
		}
	}
	return out
}

// SeriesUnder is one series on which a kind under-covers: its
// coverage over Points labelled forecasts is below 1 - alpha by more than
// the dependence-aware Tolerance; Early and Late are the coverages of its
// first and last thirds and Drift whether they differ by more than
// their sampling tolerance (thirds).
type SeriesUnder struct {
	ID          string
	Points      int
	Coverage    float64
	Tolerance   float64
	Early, Late float64
	Drift       bool
}

// underCovering returns the series (named by names) whose coverage
// values hits fall below nominal by more than their dependence-aware
// tolerance (DependentTolerance with the Newey-West inflation at lag
// lag). Series of fewer than six values are not judged.
func underCovering(names []string, hits [][]float64, nominal float64, lag int) []SeriesUnder {
	var out []SeriesUnder
	for c, h := range hits {
		if len(h) < 6 {
			continue
		}
		sum := 0.0
		for _, v := range h {
			sum += v
		}
		u := SeriesUnder{ID: names[c], Points: len(h), Coverage: sum / float64(len(h))}
		infl := neweyWest([][]float64{h}, lag)
		u.Tolerance = DependentTolerance(nominal, len(h), infl)
		if !(u.Coverage < nominal-u.Tolerance) {
			continue
		}
		u.Early, u.Late, u.Drift = thirds(h, nominal, infl)
		out = append(out, u)
	}
	return out
}

// chainNames names each chain by its sequence id (and horizon when
// there are several), or "all sequences" (and the horizon) when pooled.
func chainNames(p *problem, pts []point, chains []chain, pooled bool) []string {
	horizons := map[int]bool{}
	for _, pt := range pts {
		horizons[pt.f.H] = true
	}
	out := make([]string, len(chains))
	for c, ch := range chains {
		if len(ch.pts) == 0 {
			continue
		}
		pt := pts[ch.pts[0]]
		name := "all sequences"
		if !pooled {
			name = p.eval.Seqs[pt.seq].ID
		}
		if len(horizons) > 1 {
			name += fmt.Sprintf(" (horizon %d)", pt.f.H)
		}
		out[c] = name
	}
	return out
}
