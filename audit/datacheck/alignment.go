package datacheck

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// Unmatched returns an error naming the shift when data set d has labels
// but none of them can be matched to a forecast: rows(T) lists the rows
// whose targets the model's forecasts on a sequence of T rows are compared
// with (t+h for the forecast made at row t for horizon h), and no such
// row of d has a target (rows before a sequence's context are not
// forecast). A many-to-one model forecasts from a window's last row, so
// a shift of 1 leaves every forecast without a target; the audit would
// then have no loss term, or no test value, and say nothing useful. The
// error says which shifts would match labels, and how many. Nil when some
// forecast has a target, or when d has no label at all (a test file
// without labels).
func Unmatched(d *blocks.Dataset, rows func(T int) []int) error {
	if d == nil || !d.Labelled() || matched(d, rows) > 0 {
		return nil
	}
	labelled := 0
	for _, s := range d.Seqs {
		for t := s.Context; t < s.Len(); t++ {
			if s.HasTarget(t) {
				labelled++
			}
		}
	}
	if labelled == 0 {
		return nil
	}
	T := d.MaxLen()
	what := "the rows the model's outputs forecast have"
	if r := rows(T); len(r) == 1 {
		what = fmt.Sprintf("the model's output forecasts row %d of a sequence of %d rows, and that row has", r[0]+1, T)
	} else if len(r) > 1 && len(r) < T {
		what = fmt.Sprintf("the model's outputs forecast rows %d to %d of a sequence of %d rows, and those rows have", r[0]+1, r[len(r)-1]+1, T)
	}
	alt := ""
	best, most := 0, 0
	for _, s := range []int{0, 1, -1, 2, -2} {
		if s == d.Shift {
			continue
		}
		if n := matched(Shifted(d, s), rows); n > most {
			best, most = s, n
		}
	}
	if most > 0 {
		alt = fmt.Sprintf("; with shift %d, %d forecasts would have one", best, most)
	}
	return errs.Fix([]errs.Option{blocks.OptShift},
		"audit: no target of %s can be matched to a forecast: %s no target in any sequence with shift %d (row t takes the target written on row t%+d), though %d other rows have one%s. (An empty target cell means no label here.) Check the shift",
		d.File, what, d.Shift, d.Shift, labelled, alt)
}

// matched counts the forecasts of d whose target row has a target.
func matched(d *blocks.Dataset, rows func(T int) []int) int {
	n := 0
	for _, s := range d.Seqs {
		for _, r := range rows(s.Len()) {
			if r >= s.Context && s.HasTarget(r) {
				n++
			}
		}
	}
	return n
}

// NoResiduals returns an error naming the shift when no forecast of the
// evaluated data set eval has a leave-one-out residual at its row (m[i]
// == 0 for every forecast i, row(i) the row whose target forecast i is
// compared with): every interval would be unbounded, not for want of
// training sequences at this alpha but because no training forecast is
// compared with a target at the rows the evaluated forecasts are made for
// (test windows of another length than the training windows, labelled at
// other rows, or a shift that moved the labels). rows(T) lists the rows a
// sequence of T rows is forecast at (as for Unmatched). Nil when some
// forecast has residuals, when there are none, and when the evaluated
// sequences continue training sequences (their later rows are past the
// training rows, which the summary reports apart).
func NoResiduals(train, eval *blocks.Dataset, m []int, row func(i int) int, rows func(T int) []int) error {
	lo, hi := -1, -1
	for i, v := range m {
		if v > 0 {
			return nil
		}
		r := row(i)
		if lo < 0 || r < lo {
			lo = r
		}
		hi = max(hi, r)
	}
	for _, s := range eval.Seqs {
		if s.Context > 0 {
			return nil
		}
	}
	if lo < 0 {
		return nil
	}
	tlo, thi := -1, -1
	for _, s := range train.Seqs {
		for _, t := range rows(s.Len()) {
			if s.HasTarget(t) {
				if tlo < 0 || t < tlo {
					tlo = t
				}
				thi = max(thi, t)
			}
		}
	}
	return errs.Fix([]errs.Option{blocks.OptShift},
		"audit: every interval of %s would be unbounded: its forecasts are compared with the targets of rows %d to %d, and no training forecast is compared with a target at any of those rows (those of %s are at rows %d to %d), so no leave-one-out residual exists there. Give the test windows the length and the labelled rows of the training windows, and check the shift",
		eval.File, lo+1, hi+1, train.File, tlo+1, thi+1)
}

// TargetAsInput returns the number of sequences of d on which the model
// reads the value it forecasts: at the first labelled row that a
// forecast is compared with (rows(T), as for Unmatched; a row the model
// reads), some feature column equals the target, the same column on
// every sequence that has such a row, at least 5 of them. The layout that
// puts a window's target on an extra row after the window (24 input rows,
// then a 25th holding the target, also in the feature column) does this:
// the model is fed the target as its 25th input. 0 otherwise.
func TargetAsInput(d *blocks.Dataset, rows func(T int) []int) int {
	if d == nil || !d.Labelled() {
		return 0
	}
	var same []bool // per feature column: equal to the target so far
	n := 0
	for _, s := range d.Seqs {
		r := -1
		for _, u := range rows(s.Len()) {
			if u >= s.Context && s.HasTarget(u) && (r < 0 || u < r) {
				r = u
			}
		}
		if r < 0 {
			continue
		}
		if same == nil {
			same = make([]bool, len(s.X[r]))
			for j := range same {
				same[j] = true
			}
		}
		some := false
		for j, x := range s.X[r] {
			same[j] = same[j] && x == s.Y[r][0]
			some = some || same[j]
		}
		if !some {
			return 0
		}
		n++
	}
	if n < 5 {
		return 0
	}
	return n
}
