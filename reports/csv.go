package reports

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
)

// csvHeader names the columns of WriteCSV.
var csvHeader = []string{"id", "t", "horizon", "prediction", "lower", "upper", "target", "naive_lower", "naive_upper"}

// WriteCSV writes every interval of r as CSV, one row per forecast in the
// order of the JSON's sequences: the sequence id, the step value t, the
// horizon, the prediction, the jackknife+ limits, the target (empty when
// the evaluated data have none) and the limits of the in-sample residual
// interval. Numbers are written in full precision (strconv 'g', -1), so
// they read back to the same float64; unbounded limits are written as
// -Inf and +Inf. An id that a spreadsheet would read as a formula (one
// that starts with =, +, -, @, a tab or a carriage return and is not a
// number, such as "=HYPERLINK(...)" or "+SUM(1+1)*cmd|' /C calc'!A0") is
// written with a single quote in front, as OWASP recommends for CSV
// exports, so that it opens as text. The options are not used; they are
// taken for symmetry with the other writers.
func WriteCSV(w io.Writer, r *audit.Result, _ *Options) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	rec := make([]string, len(csvHeader))
	for _, s := range r.Sequences {
		for i := range s.Steps {
			st := &s.Steps[i]
			target := ""
			if st.Target != nil {
				target = f(*st.Target)
			}
			rec = append(rec[:0], neutralise(s.ID), f(st.Step), strconv.Itoa(st.Horizon), f(st.Prediction),
				f(st.Lower), f(st.Upper), target, f(st.NaiveLower), f(st.NaiveUpper))
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("reports: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// neutralise defuses a cell that a spreadsheet would evaluate as a
// formula: a text that starts with =, +, -, @, a tab or a carriage return
// gets a single quote in front
// (https://owasp.org/www-community/attacks/CSV_Injection). A number, such
// as -3 or +1.5e3, is left alone: it is a value, not a formula.
func neutralise(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	return "'" + s
}
