package interval

import "fmt"

// Grouping calibration values across positions (docs/design.md, section
// 6.5). A forecast's conformal quantile is finite only with at least
// MinValues(alpha) calibration values (9 at alpha 0.1), and with few more
// than that it is the largest of them: short clinical trajectories have
// few calibration sequences that reach late visits, so per-position
// quantiles run out, or sit on one extreme value, exactly where a forecast
// is needed. The rule here is Mondrian conformal prediction (Vovk, Gammerman
// and Shafer 2005, section 4.5) over a taxonomy of positions: the rows of
// one horizon are cut into groups of consecutive rows, chosen from the
// counts of calibration values alone (never from their scores), and every
// forecast of a group takes the conformal quantile of the group's values.
//
// The assumption it makes: within a group the scores are exchangeable (a
// future score at any row of the group is exchangeable with the group's
// calibration scores, the rows' score distributions alike). Under it the
// split-conformal guarantee holds for each group, P(y in interval | the
// forecast is in the group) >= 1 - alpha, and at most 1 - alpha + 1/(n +
// 1) without ties, n the group's values; row by row it holds only on
// average over the group. Where residuals grow along a sequence the late
// rows of a group can fall short, which the per-step coverage of a
// labelled test set shows.

// GroupValues is the fewest calibration values a group needs by default
// at level alpha: the smallest n whose conformal quantile (UpperRank) is
// not the largest of the n values, ceil((1 - alpha)(n + 1)) <= n - 1,
// which is n >= 2/alpha - 1 (19 at alpha 0.1, 39 at 0.05). Equivalently,
// the group's coverage exceeds 1 - alpha by at most alpha/2 (1/(n + 1)
// <= alpha/2). With fewer values the quantile is the group's largest
// score: the least stable of them and, in expectation, the widest.
func GroupValues(alpha float64) int {
	n := MinValues(alpha)
	for UpperRank(alpha, n) > n-1 {
		n++
	}
	return n
}

// GroupRows cuts the rows of one horizon, whose calibration values
// number counts[t], into groups of consecutive rows with at least need
// values each, and returns for every row the rows of its group in
// ascending order. Scanning rows in order: a row with need values or
// more is a group of its own; other rows gather into a group that closes
// once it holds need values; a gathered run that ends short of need (at
// a row that is a group of its own, or at the last row) joins the group
// before it, or when there is none the group after it. When all rows
// together have fewer than need, they are one group.
func GroupRows(counts []int, need int) [][]int {
	var groups [][]int
	var run, pending []int
	n := 0
	add := func(g []int) {
		groups = append(groups, append(pending, g...))
		pending = nil
	}
	flush := func() {
		switch {
		case len(run) == 0:
		case n >= need:
			add(run)
		case len(groups) > 0:
			groups[len(groups)-1] = append(groups[len(groups)-1], run...)
		default:
			pending = append(pending, run...)
		}
		run, n = nil, 0
	}
	for t, c := range counts {
		if c >= need {
			flush()
			add([]int{t})
			continue
		}
		run, n = append(run, t), n+c
		if n >= need {
			flush()
		}
	}
	flush()
	if len(pending) > 0 {
		groups = append(groups, pending)
	}
	out := make([][]int, len(counts))
	for _, g := range groups {
		for _, t := range g {
			out[t] = g
		}
	}
	return out
}

// GroupNeed is how many calibration values a group of rows needs
// (docs/design.md, section 6.5): pool (the --calibration-pool option)
// when positive, else GroupValues, never fewer than MinValues.
func GroupNeed(alpha float64, pool int) int {
	if pool <= 0 {
		pool = GroupValues(alpha)
	}
	return max(pool, MinValues(alpha))
}

// GroupHorizons applies GroupRows to every horizon: forecast i is made
// at row rows[i] for horizon hs[i] and has counts[i] calibration values.
// It returns, per horizon, the rows of each row's group (rows without a
// forecast count as none).
func GroupHorizons(rows, hs, counts []int, need int) map[int][][]int {
	byH := map[int][]int{}
	for i, t := range rows {
		h := hs[i]
		byH[h] = append(byH[h], make([]int, max(0, t+1-len(byH[h])))...)
		byH[h][t] = counts[i]
	}
	out := make(map[int][][]int, len(byH))
	for h, n := range byH {
		out[h] = GroupRows(n, need)
	}
	return out
}

// StepList names rows (0-based) as 1-based steps, runs as ranges: "step
// 3", "steps 1-4 and 9", "steps 1, 3 and 5-6".
func StepList(rows []int) string {
	var parts []string
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && rows[j+1] == rows[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(rows[i]+1))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rows[i]+1, rows[j]+1))
		}
		i = j + 1
	}
	if len(parts) == 1 && len(rows) == 1 {
		return "step " + parts[0]
	}
	out := "steps "
	for i, p := range parts {
		switch {
		case i == 0:
		case i == len(parts)-1:
			out += " and "
		default:
			out += ", "
		}
		out += p
	}
	return out
}
