package adaptive

// Under-coverage per series: the figures of a kind pool every series; a
// series that under-covers by more than its dependence-aware tolerance
// is listed, with the coverage of its first and last thirds (thirds),
// which names where it loses coverage.

// SeriesUnder is one series on which a kind under-covers: its
// coverage over Points labelled forecasts is below 1 - alpha by more than
// the dependence-aware Tolerance; Early and Late are the coverages of its
// first and last thirds and Drift whether they differ by more than
// their sampling tolerance.
type SeriesUnder struct {
	ID          string
	Points      int
	Coverage    float64
	Tolerance   float64
	Early, Late float64
	Drift       bool
}

// UnderCovering returns the series (named by names) whose 0/1 coverage
// values hits, in time order, fall below nominal by more than their
// dependence-aware tolerance (DependentTolerance with the Newey-West
// inflation at lag lag). Series of fewer than six values are not judged.
func UnderCovering(names []string, hits [][]float64, nominal float64, lag int) []SeriesUnder {
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
