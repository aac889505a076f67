package reports

import (
	"fmt"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
)

// The intervals that adapt along time (adaptive.Result): their JSON
// section and step fields, and their comparison with the other kinds in
// the Markdown, HTML and terminal reports.

// jsonAdaptive mirrors adaptive.Result.
type jsonAdaptive struct {
	Base          string             `json:"base"`
	Pooled        bool               `json:"pooled"`
	Source        string             `json:"source"`
	Window        int                `json:"window"`
	Gamma         fnum               `json:"gamma"`
	Grid          []fnum             `json:"grid"`
	Rho           fnum               `json:"rho"`
	RollingWindow int                `json:"rolling_window"`
	LabelDelay    int                `json:"label_delay"`
	Chains        int                `json:"chains"`
	Longest       int                `json:"longest"`
	Kinds         []jsonAdaptiveKind `json:"kinds"`
	Notes         []string           `json:"notes"`
	// The finite kinds' options, the interval score's penalty for an
	// unbounded interval, and the adaptive kind recommended.
	Step             fnum   `json:"step"`
	Integrator       fnum   `json:"integrator"`
	Saturation       fnum   `json:"saturation"`
	Clip             fnum   `json:"clip"`
	Decay            fnum   `json:"decay"`
	Scorecast        bool   `json:"scorecast"`
	Penalty          fnum   `json:"unbounded_width_penalty"`
	Recommended      string `json:"recommended"`
	RecommendedHolds bool   `json:"recommended_holds"`
}

// jsonAdaptiveKind is one kind's metrics with coverage over time.
type jsonAdaptiveKind struct {
	Kind          string `json:"kind"`
	Coverage      fnum   `json:"coverage"`
	WorstWindow   fnum   `json:"worst_window"`
	Windows       int    `json:"windows"`
	MeanLength    fnum   `json:"mean_length"`
	Infinite      int    `json:"infinite_intervals"`
	Empty         int    `json:"empty_intervals"`
	IntervalScore fnum   `json:"interval_score"`
	Bound         fnum   `json:"bound"`
	Guarantee     string `json:"guarantee"`
	// UnderCovering are the series on which the kind under-covers.
	UnderCovering []jsonSeriesUnder `json:"under_covering"`
	// Widths counting every interval (null when infinite).
	Unbounded   fnum `json:"unbounded_share"`
	MedianWidth fnum `json:"median_width"`
	P90Width    fnum `json:"p90_width"`
	Winkler     fnum `json:"interval_score_all"`
}

// jsonSeriesUnder mirrors adaptive.SeriesUnder.
type jsonSeriesUnder struct {
	ID        string `json:"id"`
	Points    int    `json:"points"`
	Coverage  fnum   `json:"coverage"`
	Tolerance fnum   `json:"tolerance"`
	Early     fnum   `json:"early_coverage"`
	Late      fnum   `json:"late_coverage"`
	Drift     bool   `json:"drift"`
}

func jsonAdaptiveOf(a *adaptive.Result) *jsonAdaptive {
	if a == nil {
		return nil
	}
	j := &jsonAdaptive{Base: a.Base, Pooled: a.Pooled, Source: a.Source, Window: a.Window, Gamma: fnum(a.Gamma), Grid: fnums(a.Grid),
		Rho: fnum(a.Rho), RollingWindow: a.RollingWindow, LabelDelay: a.LabelDelay, Chains: a.Chains, Longest: a.Longest, Kinds: []jsonAdaptiveKind{}, Notes: orEmpty(a.Notes),
		Step: fnum(a.Step), Integrator: fnum(a.Integrator), Saturation: fnum(a.Saturation), Clip: fnum(a.Clip), Decay: fnum(a.Decay), Scorecast: a.Scorecast,
		Penalty: fnum(a.Penalty), Recommended: a.Recommended, RecommendedHolds: a.RecommendedHolds}
	for _, k := range a.Kinds {
		jk := jsonAdaptiveKind{Kind: k.Kind, Coverage: fnum(k.Coverage), WorstWindow: fnum(k.WorstWindow), Windows: k.Windows,
			MeanLength: fnum(k.MeanLength), Infinite: k.Infinite, Empty: k.Empty, IntervalScore: fnum(k.IntervalScore), Bound: fnum(k.Bound), Guarantee: k.Guarantee,
			UnderCovering: []jsonSeriesUnder{}, Unbounded: fnum(k.Unbounded), MedianWidth: fnum(k.MedianWidth), P90Width: fnum(k.P90Width), Winkler: fnum(k.Winkler)}
		for _, u := range k.Under {
			jk.UnderCovering = append(jk.UnderCovering, jsonSeriesUnder{ID: u.ID, Points: u.Points, Coverage: fnum(u.Coverage), Tolerance: fnum(u.Tolerance),
				Early: fnum(u.Early), Late: fnum(u.Late), Drift: u.Drift})
		}
		j.Kinds = append(j.Kinds, jk)
	}
	return j
}

// jsonStepAdaptive are the adaptive limits of one step, in the step's
// line (null when unbounded).
type jsonStepAdaptive struct {
	ACIAlpha     *fnum `json:"aci_alpha,omitempty"`
	ACIEmpty     bool  `json:"aci_empty,omitempty"`
	ACILower     *fnum `json:"aci_lower,omitempty"`
	ACIUpper     *fnum `json:"aci_upper,omitempty"`
	AgACILower   *fnum `json:"agaci_lower,omitempty"`
	AgACIUpper   *fnum `json:"agaci_upper,omitempty"`
	NexCPLower   *fnum `json:"nexcp_lower,omitempty"`
	NexCPUpper   *fnum `json:"nexcp_upper,omitempty"`
	RollingLower *fnum `json:"rolling_lower,omitempty"`
	RollingUpper *fnum `json:"rolling_upper,omitempty"`
	// The kinds that stay finite: ACI clipped's level and interval,
	// quantile tracking's and conformal PID's quantile and interval.
	ClippedAlpha  *fnum `json:"aci_clipped_alpha,omitempty"`
	ClippedEmpty  bool  `json:"aci_clipped_empty,omitempty"`
	ClippedLower  *fnum `json:"aci_clipped_lower,omitempty"`
	ClippedUpper  *fnum `json:"aci_clipped_upper,omitempty"`
	Tracked       *fnum `json:"qt_quantile,omitempty"`
	TrackingEmpty bool  `json:"qt_empty,omitempty"`
	TrackingLower *fnum `json:"qt_lower,omitempty"`
	TrackingUpper *fnum `json:"qt_upper,omitempty"`
	PID           *fnum `json:"pid_quantile,omitempty"`
	PIDEmpty      bool  `json:"pid_empty,omitempty"`
	PIDLower      *fnum `json:"pid_lower,omitempty"`
	PIDUpper      *fnum `json:"pid_upper,omitempty"`
}

func jsonStepAdaptiveOf(a *adaptive.Step) jsonStepAdaptive {
	if a == nil {
		return jsonStepAdaptive{}
	}
	return jsonStepAdaptive{fptr(a.Alpha), a.Empty, fptr(a.ACILower), fptr(a.ACIUpper), fptr(a.AgACILower), fptr(a.AgACIUpper),
		fptr(a.NexCPLower), fptr(a.NexCPUpper), fptr(a.RollingLower), fptr(a.RollingUpper),
		fptr(a.ClippedAlpha), a.ClippedEmpty, fptr(a.ClippedLower), fptr(a.ClippedUpper),
		fptr(a.Tracked), a.TrackingEmpty, fptr(a.TrackingLower), fptr(a.TrackingUpper),
		fptr(a.PID), a.PIDEmpty, fptr(a.PIDLower), fptr(a.PIDUpper)}
}

// fptr is a pointer to x as a JSON number (null when not finite), for the
// optional limits of a step.
func fptr(x float64) *fnum {
	v := fnum(x)
	return &v
}

// adaptiveName is the name of an adaptive kind in a table.
func adaptiveName(kind string) string {
	switch kind {
	case adaptive.KindACI:
		return "ACI"
	case adaptive.KindAgACI:
		return "AgACI"
	case adaptive.KindNexCP:
		return "NexCP"
	case adaptive.KindRolling:
		return "rolling split conformal"
	case adaptive.KindACIClipped:
		return "ACI clipped"
	case adaptive.KindQuantileTracking:
		return "quantile tracking"
	case adaptive.KindPID:
		return "conformal PID"
	}
	return kindName(kind)
}

// adaptiveView is the comparison of kinds over time, for every format.
type adaptiveView struct {
	Lead  string
	Head  []string
	Rows  [][]string
	Notes []string
}

func newAdaptiveView(r *audit.Result) *adaptiveView {
	a := r.Adaptive
	if a == nil {
		return nil
	}
	scope := "each test sequence runs its own state"
	if a.Pooled {
		scope = "one state runs over all test sequences in the order of their steps"
	}
	var source string
	switch a.Source {
	case "calibration":
		source = "the calibration set's scores at the same step"
	case "window":
		source = fmt.Sprintf("the series' own last %d labelled forecasts", a.Window)
	case "residuals":
		source = "each forecast's leave-one-block-out residuals (ACI and AgACI) and the series' own earlier forecasts (NexCP and rolling)"
	default:
		source = "every earlier labelled forecast of the series"
	}
	base := "prediction ± q"
	if a.Base == adaptive.BaseJackknife {
		base = "the jackknife+ interval (ACI and AgACI: recomputed at their working level from the leave-one-block-out residuals; NexCP and rolling: scaled about the prediction)"
	}
	if a.LabelDelay > 0 {
		source += fmt.Sprintf("; each label taken %d rows after its target's row", a.LabelDelay)
	}
	grid := make([]string, len(a.Grid))
	for i, g := range a.Grid {
		grid[i] = fmt.Sprint(g)
	}
	pid := fmt.Sprintf("integrator K_I %g, C_sat %g", a.Integrator, a.Saturation)
	if a.Integrator < 0 {
		pid = "no integrator"
	}
	if a.Scorecast {
		pid += ", the jackknife+ half-width as scorecaster"
	}
	decay := ""
	if a.Decay > 0 {
		decay = fmt.Sprintf(" Every online kind's step decays as n^-%g at its n-th label.", a.Decay)
	}
	v := &adaptiveView{
		Lead: fmt.Sprintf("Intervals that adapt along time, forecast by forecast as the labels arrive (%s; %d series, the longest with %d labelled forecasts). Base interval: %s, calibrated on %s. ACI step %g; AgACI aggregates the steps %s; NexCP weighs scores by %g per forecast of age. ACI clipped replaces ACI's unbounded intervals by the member at %g times the largest score seen; quantile tracking steps by %g times the largest of the last %d scores; conformal PID adds to it %s.%s The worst window is the lowest coverage of %d consecutive forecasts of one series. Widths count every interval: the unbounded share, the median and 90th percentile of the width (infinite when more than half, or a tenth, of the intervals are unbounded), the mean over the finite intervals, and the interval score over every interval with an unbounded one counted as %s wide (twice the range of the targets).",
			scope, a.Chains, a.Longest, base, source, a.Gamma, strings.Join(grid, ", "), a.Rho, a.Clip, a.Step, a.RollingWindow, pid, decay, a.RollingWindow, num(a.Penalty)),
		Head:  []string{"Interval", "Coverage", "Worst window", "Unbounded", "Median width", "90% width", "Mean finite width", "Empty", "Interval score", "Winkler (finite)", "Guarantee"},
		Notes: a.Notes,
	}
	for _, k := range a.Kinds {
		g := k.Guarantee
		if (k.Kind == adaptive.KindACI || k.Kind == adaptive.KindACIClipped || k.Kind == adaptive.KindQuantileTracking) && k.Bound < 1 {
			g += fmt.Sprintf(" (here: within %s of %s)", pct(k.Bound), pct0(1-r.Setting.Alpha))
		}
		name := adaptiveName(k.Kind)
		if k.Kind == a.Recommended {
			name += " (recommended)"
		}
		unb := count(k.Infinite)
		if k.Infinite > 0 {
			unb += fmt.Sprintf(" (%s)", pct(k.Unbounded))
		}
		v.Rows = append(v.Rows, []string{name, pct(k.Coverage), pct(k.WorstWindow), unb, num(k.MedianWidth), num(k.P90Width), num(k.MeanLength), count(k.Empty), num(k.Winkler), num(k.IntervalScore), g})
		for _, u := range k.Under {
			n := fmt.Sprintf("%s under-covers on %s: %s of %d forecasts, below %s by more than its tolerance ±%.1f points", adaptiveName(k.Kind), u.ID, pct(u.Coverage), u.Points, pct0(1-r.Setting.Alpha), 100*u.Tolerance)
			if u.Drift {
				n += fmt.Sprintf("; its coverage drifts from %s in the first third to %s in the last", pct(u.Early), pct(u.Late))
			}
			v.Notes = append(v.Notes, n+": this series is not exchangeable with what the kind calibrates on.")
		}
	}
	return v
}

// writeAdaptiveMarkdown writes the comparison of kinds over time.
func writeAdaptiveMarkdown(md *mdWriter, r *audit.Result) {
	v := newAdaptiveView(r)
	if v == nil {
		return
	}
	fmt.Fprintf(md.b, "## Intervals over time\n\n%s\n\n", mdEscape(v.Lead))
	if len(v.Rows) > 0 {
		md.table(v.Head, "l"+strings.Repeat("r", len(v.Head)-2)+"l", v.Rows)
	}
	if len(v.Notes) > 0 {
		md.list(v.Notes)
	}
}

// adaptiveSummaryLines are the terminal summary's lines on the adaptive
// kinds: coverage, worst window and width of each.
func adaptiveSummaryLines(r *audit.Result) []string {
	a := r.Adaptive
	if a == nil || len(a.Kinds) == 0 {
		return nil
	}
	var parts []string
	for _, k := range a.Kinds {
		rec := ""
		if k.Kind == a.Recommended {
			rec = ", recommended"
		}
		parts = append(parts, fmt.Sprintf("%s %s (worst window %s, width %s, median width %s, %d unbounded%s)", adaptiveName(k.Kind), pct(k.Coverage), pct(k.WorstWindow), num(k.MeanLength), num(k.MedianWidth), k.Infinite, rec))
	}
	return []string{"Over time: " + strings.Join(parts, "; ") + "."}
}
