package reports

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/audit"
)

// table is a table of the HTML and Markdown reports: its header and its
// rows of formatted cells (the first column a label, the others numbers).
type table struct {
	Head []string
	Rows [][]string
}

// stepTable is the per-step table of the coverage section: per row of the
// sequences (labelled by its step value when every sequence agrees on it)
// the labelled values, the coverage of the jackknife+ and in-sample
// intervals, their mean widths, the RMSE and, with the Newton estimator,
// the mean leverage of the training terms at that row. Nil without
// labelled values.
func stepTable(r *audit.Result) *table {
	s := r.Summary
	if s == nil || len(s.CoveragePerStep) == 0 {
		return nil
	}
	lev := r.Diag.LeveragePerStep
	t := &table{Head: []string{"Step", "Values", "Coverage", "In-sample coverage", "Mean width", "In-sample width", "RMSE"}}
	if len(lev) > 0 {
		t.Head = append(t.Head, "Mean leverage")
	}
	stepOf := stepValues(r)
	for i := range s.CoveragePerStep {
		n := 0
		if i < len(s.PointsPerStep) {
			n = s.PointsPerStep[i]
		}
		if n == 0 {
			continue
		}
		label := fmt.Sprint(i + 1)
		if v, ok := stepOf[i]; ok {
			label = step(v)
		}
		row := []string{label, count(n), pct(s.CoveragePerStep[i]), pct(at(s.Naive.CoveragePerStep, i)),
			num(at(s.LengthPerStep, i)), num(at(s.Naive.LengthPerStep, i)), num(at(s.RMSEPerStep, i))}
		if len(lev) > 0 {
			row = append(row, num(at(lev, i)))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// horizonTable is the per-horizon table: per horizon h (the forecasts of
// row t+h) the labelled values, the coverage and the mean width of the
// jackknife+ intervals. Nil for a model with one horizon or without
// labelled values.
func horizonTable(r *audit.Result) *table {
	s := r.Summary
	if s == nil || len(s.CoveragePerHorizon) == 0 {
		return nil
	}
	t := &table{Head: []string{"Horizon", "Values", "Coverage", "Mean width"}}
	for h := range s.CoveragePerHorizon {
		n := 0
		if h < len(s.PointsPerHorizon) {
			n = s.PointsPerHorizon[h]
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(h), count(n), pct(s.CoveragePerHorizon[h]), num(at(s.LengthPerHorizon, h))})
	}
	return t
}

// toolName is the tool's name for the reports' footers: its version line
// (such as "rnnaudit v1.2.0 (go1.26.8)") when o gives one, else "rnnaudit".
func toolName(o *Options) string {
	if v := o.toolVersion(); v != "" {
		return v
	}
	return "rnnaudit"
}
