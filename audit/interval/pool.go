package interval

// Pooling calibration values across positions (docs/design.md, section
// 6.5). A forecast's conformal quantile is finite only with at least
// MinValues(alpha) calibration values (9 at alpha 0.1); short clinical
// trajectories have few calibration sequences that reach late visits, so
// per-position quantiles run out exactly where a forecast is needed. The
// rule here: a row with too few values of its own takes, with its own,
// the values of the nearest rows of the same horizon (the earlier row
// first at equal distance), whole rows at a time, until it has at least
// that many. A row with enough values keeps its own, so its quantile
// and its per-position guarantee are unchanged.
//
// The assumption it makes: the scores of the pooled rows are alike (a
// future score at row t is exchangeable with the calibration scores of
// the rows pooled for it). Under it the split-conformal guarantee holds
// for the pooled rows, P(y in interval) >= 1 - alpha; where residuals
// grow along a sequence, the borrowed earlier rows' scores are smaller
// and the late row can fall short, which the per-step coverage of a
// labelled test set shows.

// PoolRows returns, for every row t of one horizon whose calibration
// values number counts[t], the rows whose values its quantile uses: {t}
// when counts[t] >= need, else t and its nearest rows as above until
// their values reach need (all rows when they never do).
func PoolRows(counts []int, need int) [][]int {
	out := make([][]int, len(counts))
	for t, n := range counts {
		rows := []int{t}
		for d := 1; n < need && (t-d >= 0 || t+d < len(counts)); d++ {
			for _, r := range []int{t - d, t + d} {
				if r >= 0 && r < len(counts) && n < need {
					rows = append(rows, r)
					n += counts[r]
				}
			}
		}
		out[t] = rows
	}
	return out
}
