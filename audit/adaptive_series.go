package audit

import "fmt"

// Under-coverage per series of the adaptive kinds: which of several
// series under-covers, and whether its coverage drifts
// (adaptive.UnderCovering, on the coverage values of each chain).

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
