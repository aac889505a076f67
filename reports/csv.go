package reports

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// CSVHeader names the columns of WriteCSV, in order. The header is
// stable: columns are only ever added at the end, so that programs that
// read the CSV by name or by position keep working. The columns are:
//
//	id                          the sequence id
//	t                           the step value of the row the forecast is made at
//	horizon                     0 for one output per step; h for the forecast of row t+h
//	prediction                  the model's forecast
//	lower, upper                the jackknife+ interval (docs/design.md, section 5)
//	target                      the target, empty when the data have none
//	naive_lower, naive_upper    the in-sample residual interval
//	m                           leave-one-block-out residuals behind the jackknife+ limits
//	split_lower, split_upper    split conformal (empty without a calibration set)
//	bonferroni_lower, bonferroni_upper
//	                            split conformal at alpha / L (joint coverage of a
//	                            sequence; empty without a calibration set)
//	conformal_jackknife_lower, conformal_jackknife_upper
//	                            conformalized jackknife+ (empty without a
//	                            calibration set)
//	m_calibration               calibration values at this forecast (empty without
//	                            a calibration set)
//	recommended                 the kind the audit recommends (RecommendedKind):
//	                            jackknife_plus, conformal_jackknife_plus,
//	                            split_conformal or in_sample; empty when it
//	                            recommends none
//	recommended_lower, recommended_upper
//	                            that kind's limits (empty when none is recommended)
//	aci_alpha, aci_lower, aci_upper, agaci_lower, agaci_upper, nexcp_lower,
//	nexcp_upper, rolling_lower, rolling_upper
//	                            the intervals that adapt along time (audit
//	                            --adaptive; empty without): ACI's working level
//	                            alpha_t and interval (an empty ACI interval has
//	                            both limits at the prediction), AgACI's, NexCP's
//	                            and rolling split conformal's
//
// With the adaptive kinds (audit --adaptive) the columns of
// CSVFiniteHeader follow: ACI clipped's working level and limits,
// quantile tracking's and conformal PID's quantile and limits (an empty
// interval has both limits at the prediction). A classifier's result
// (audit --loss bce or bce-logits) ends with the columns of
// CSVClassHeader. Unbounded limits are -Inf and +Inf.
var CSVHeader = []string{
	"id", "t", "horizon", "prediction", "lower", "upper", "target", "naive_lower", "naive_upper",
	"m", "split_lower", "split_upper", "bonferroni_lower", "bonferroni_upper",
	"conformal_jackknife_lower", "conformal_jackknife_upper", "m_calibration",
	"recommended", "recommended_lower", "recommended_upper",
	"aci_alpha", "aci_lower", "aci_upper", "agaci_lower", "agaci_upper", "nexcp_lower", "nexcp_upper", "rolling_lower", "rolling_upper",
}

// CSVFiniteHeader are the columns of the adaptive kinds that stay finite,
// written after CSVHeader's when the result has the adaptive kinds.
var CSVFiniteHeader = []string{
	"aci_clipped_alpha", "aci_clipped_lower", "aci_clipped_upper", "qt_quantile", "qt_lower", "qt_upper", "pid_quantile", "pid_lower", "pid_upper",
}

// WriteCSV writes every interval of r as CSV, one row per forecast in the
// order of the JSON's sequences, with the columns of CSVHeader: every
// kind of interval the result holds and the recommended one. Numbers are
// written in full precision (strconv 'g', -1), so they read back to the
// same float64; unbounded limits are written as -Inf and +Inf, and a
// column of a kind the result does not hold (the calibrated kinds without
// a calibration set) is empty. An id that a spreadsheet would read as a
// formula (one that starts with =, +, -, @, a tab or a carriage return and
// is not a number, such as "=HYPERLINK(...)" or "+SUM(1+1)*cmd|' /C
// calc'!A0") is written with a single quote in front, as OWASP recommends
// for CSV exports, so that it opens as text. The options are not used;
// they are taken for symmetry with the other writers.
func WriteCSV(w io.Writer, r *audit.Result, _ *Options) error {
	cw := csv.NewWriter(w)
	head := CSVHeader
	if r.Adaptive != nil {
		head = append(slices.Clip(CSVHeader), CSVFiniteHeader...)
	}
	finite := len(head) - len(CSVHeader)
	if r.Classification != nil {
		head = append(slices.Clip(head), CSVClassHeader...)
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	rec := make([]string, len(head))
	kind := RecommendedKind(r)
	for _, s := range r.Sequences {
		for i := range s.Steps {
			st := &s.Steps[i]
			target := ""
			if st.Target != nil {
				target = f(*st.Target)
			}
			rec = append(rec[:0], neutralise(s.ID), f(st.Step), strconv.Itoa(st.Horizon), f(st.Prediction),
				f(st.Lower), f(st.Upper), target, f(st.NaiveLower), f(st.NaiveUpper), strconv.Itoa(st.M))
			if c := st.Conformal; c != nil {
				rec = append(rec, f(c.SplitLower), f(c.SplitUpper), f(c.BonferroniLower), f(c.BonferroniUpper),
					f(c.JackknifeLower), f(c.JackknifeUpper), strconv.Itoa(c.M))
			} else {
				rec = append(rec, "", "", "", "", "", "", "")
			}
			if lo, up, ok := KindLimits(st, kind); ok {
				rec = append(rec, kind, f(lo), f(up))
			} else {
				rec = append(rec, "", "", "")
			}
			if a := st.Adaptive; a != nil {
				rec = append(rec, f(a.Alpha), f(a.ACILower), f(a.ACIUpper), f(a.AgACILower), f(a.AgACIUpper),
					f(a.NexCPLower), f(a.NexCPUpper), f(a.RollingLower), f(a.RollingUpper),
					f(a.ClippedAlpha), f(a.ClippedLower), f(a.ClippedUpper), f(a.Tracked), f(a.TrackingLower), f(a.TrackingUpper),
					f(a.PID), f(a.PIDLower), f(a.PIDUpper))
			} else {
				rec = append(rec, "", "", "", "", "", "", "", "", "")
				for range finite {
					rec = append(rec, "")
				}
			}
			if r.Classification != nil {
				rec = append(rec, csvClass(st.Class)...)
			}
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

// RecommendedKind is the kind of interval (an audit Kind constant) the
// audit recommends for r's forecasts: without a calibration set the
// jackknife+ (the audit's interval; the in-sample one is only a
// baseline); with one, the kind chosen on the calibration values
// (audit.Conformal.Recommendation), labelled test values or not, or ""
// when no kind holds there with a bounded interval.
func RecommendedKind(r *audit.Result) string {
	if r.Conformal == nil {
		return interval.KindJackknife
	}
	kind, _ := recommendation(r)
	return kind
}

// KindLimits are the limits of one forecast by the interval of the given
// kind (an audit Kind constant); ok is false when the step does not hold
// that kind (a calibrated kind without a calibration set, or an unknown
// kind).
func KindLimits(st *audit.StepResult, kind string) (lower, upper float64, ok bool) {
	c := st.Conformal
	switch {
	case kind == interval.KindJackknife:
		return st.Lower, st.Upper, true
	case kind == interval.KindInSample:
		return st.NaiveLower, st.NaiveUpper, true
	case c == nil:
		return math.NaN(), math.NaN(), false
	case kind == interval.KindSplit:
		return c.SplitLower, c.SplitUpper, true
	case kind == interval.KindBonferroni:
		return c.BonferroniLower, c.BonferroniUpper, true
	case kind == interval.KindConformalJackknife:
		return c.JackknifeLower, c.JackknifeUpper, true
	case kind == interval.KindNormalised:
		return c.NormalisedLower, c.NormalisedUpper, true
	}
	return math.NaN(), math.NaN(), false
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
