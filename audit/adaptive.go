package audit

import (
	"fmt"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// Intervals that adapt along time (docs/design.md, section 7): package
// adaptive runs ACI, AgACI, NexCP and rolling split conformal along each
// series over plain values; the audit gives it the test points in time
// order, per sequence and horizon or pooled (adaptiveChains), their base
// intervals (split conformal's prediction ± q with the calibration set's
// scores, or the jackknife+ interval: recomputed at the working level
// from the points' leave-one-block-out sets, adaptive_jackknife.go, or
// scaled about the prediction), and compares the kinds' metrics with the
// other kinds' (adaptive.Result).

// adaptiveChains groups the points by series: per sequence and horizon, or per
// horizon when pooled, ordered by time (adaptive.Chains). Time is the row (per
// sequence) or the row's step value (pooled; beyond a sequence's last row the
// steps go on at its last spacing); the label of a forecast made at row r for
// horizon h arrives at row r+h+delay. The windows of a long series
// (blocks.Windowing) are that series, at the rows of the series.
func adaptiveChains(p *problem, pts []point, pooled bool, delay int) []adaptive.Chain {
	ts := make([]adaptive.Timed, len(pts))
	for i, pt := range pts {
		seq, off, steps := pt.seq, 0, p.eval.Seqs[pt.seq].Steps
		if w := p.eval.Windows; w != nil {
			o := w.Origin[pt.seq]
			seq, off, steps = o.Seq, o.Lo, w.Series.Seqs[o.Seq].Steps
		}
		when := func(row int) float64 {
			n := len(steps)
			switch {
			case !pooled:
				return float64(row)
			case row < n:
				return steps[row]
			case n >= 2:
				return steps[n-1] + float64(row-n+1)*(steps[n-1]-steps[n-2])
			}
			return math.Inf(1)
		}
		ts[i] = adaptive.Timed{Series: seq, Horizon: pt.f.H, Time: when(off + pt.f.T), Arrival: when(off + pt.f.T + pt.f.H + delay), Tie: seq}
		if pooled {
			ts[i].Series = -1
		}
	}
	return adaptive.Chains(ts)
}

// adaptiveResult computes the adaptive intervals of the test points pts (whose
// jackknife+ and in-sample limits are jk, calibrated limits conf, nil
// without a calibration set cf) and attaches them to the steps of seqs,
// which sequences laid out from pts. sets (testLimits) gives the
// points' jackknife+ sets on the jackknife base, nil otherwise; note, when
// not empty, says why the base is scaled instead.
func adaptiveResult(p *problem, cf *calFit, pts []point, jk limits, conf []*interval.StepConformal, seqs []SequenceResult, sets jackknifeSets, note string) *adaptive.Result {
	o := *p.opt.Adaptive
	alpha := p.opt.Alpha
	ad := &adaptive.Result{Base: o.Base, Pooled: o.Pooled, Window: o.Window, Gamma: o.Gamma, Grid: slices.Clone(o.Grid), Rho: o.Rho, RollingWindow: o.RollingWindow, LabelDelay: o.LabelDelay,
		Step: o.Step, Integrator: o.Integrator, Saturation: o.Saturation, Clip: o.Clip, Decay: o.Decay, Scorecast: o.Base == adaptive.BaseSplit && !o.NoScorecast}
	if note != "" {
		ad.Notes = append(ad.Notes, note)
	}
	fc := make([]adaptive.Forecast, len(pts))
	for i, pt := range pts {
		fc[i] = adaptive.Forecast{Pred: pt.pred, Y: pt.y, Labelled: pt.has, Lower: jk.lo[i], Upper: jk.up[i]}
	}
	base := adaptive.Base{Sets: sets}
	switch {
	case cf != nil && o.Window == 0:
		ad.Source = "calibration"
		scores := map[forecast][]float64{}
		for k, c := range cf.points {
			if !c.has {
				continue
			}
			f := adaptive.Forecast{Pred: c.pred, Y: c.y, Lower: cf.lim.lo[k], Upper: cf.lim.up[k]}
			scores[c.f] = append(scores[c.f], f.Score(o.Base))
		}
		for _, v := range scores {
			slices.Sort(v)
		}
		base.Scores = func(i int) []float64 { return scores[pts[i].f] }
	case o.Window > 0:
		ad.Source = "window"
	default:
		ad.Source = "past"
	}
	if sets != nil {
		ad.Source = "residuals"
	}
	chains := adaptiveChains(p, pts, o.Pooled, o.LabelDelay)
	steps := make([]adaptive.Step, len(pts))
	delayed := false
	tallies := make([]adaptive.Tally, len(chains))
	for c, ch := range chains {
		tallies[c] = adaptive.Run(o, alpha, fc, ch, base, steps)
		n := 0
		for j, i := range ch.Points {
			if pts[i].has {
				n++
				if j+1 < len(ch.Points) && !(ch.Arrival[j] < ch.Time[j+1]) {
					delayed = true
				}
			}
		}
		ad.Longest = max(ad.Longest, n)
	}
	ad.Chains = len(chains)
	// Attach to the steps, in the order sequences laid them out.
	next := make([]int, len(seqs))
	for i, pt := range pts {
		st := steps[i]
		seqs[pt.seq].Steps[next[pt.seq]].Adaptive = &st
		next[pt.seq]++
	}
	if ad.Longest < o.RollingWindow {
		hint := "; pool the sequences in time order (--adaptive-pooled) when they are windows of one series"
		if o.Pooled {
			hint = ""
		}
		ad.Notes = append(ad.Notes, fmt.Sprintf("No series has %d labelled forecasts (the longest has %d): the worst rolling-window coverage is not measured, and the adaptive kinds have had little time to adapt%s.", o.RollingWindow, ad.Longest, hint))
	}
	if delayed {
		ad.Notes = append(ad.Notes, "Some forecasts are labelled only after the next forecast of their series is made (horizons beyond the next row, or several series at one time): the adaptive state is updated when the label arrives, and ACI's long-run bound, proved for immediate labels, holds only approximately.")
	}
	labelled := false
	for _, pt := range pts {
		labelled = labelled || pt.has
	}
	if !labelled {
		return ad
	}
	lv, n := p.level(), len(pts)
	names := chainNames(p, pts, chains, o.Pooled)
	sum := func(kind string, lo, up []float64) interval.KindSummary {
		return kindSummary(kind, lv, pts, lo, up, nil)
	}
	ad.Penalty = adaptive.WidthPenalty(fc)
	ad.AddOnline(o, alpha, fc, chains, names, steps, tallies, delayed, p.opt.timeLag(), sum)
	add := func(kind string, lo, up []float64, guarantee string) {
		ad.Add(fc, chains, names, kind, lo, up, nil, guarantee, math.NaN(), alpha, p.opt.timeLag(), sum)
	}
	add(interval.KindJackknife, jk.lo, jk.up, fmt.Sprintf("%g with exact re-training and exchangeable sequences (jackknife+); none when the test period is not exchangeable with the training period", 1-2*alpha))
	add(interval.KindInSample, jk.nlo, jk.nup, "none")
	if conf != nil {
		slo, sup, clo, cup := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i, c := range conf {
			slo[i], sup[i], clo[i], cup[i] = c.SplitLower, c.SplitUpper, c.JackknifeLower, c.JackknifeUpper
		}
		g := fmt.Sprintf("%g per forecast when calibration and test sequences are exchangeable; none when the test period drifts from the calibration period", 1-alpha)
		add(interval.KindSplit, slo, sup, g)
		add(interval.KindConformalJackknife, clo, cup, g)
	}
	return ad
}

// chainNames names each chain by its sequence id (and horizon when
// there are several), or "all sequences" (and the horizon) when pooled.
func chainNames(p *problem, pts []point, chains []adaptive.Chain, pooled bool) []string {
	horizons := map[int]bool{}
	for _, pt := range pts {
		horizons[pt.f.H] = true
	}
	out := make([]string, len(chains))
	for c, ch := range chains {
		if len(ch.Points) == 0 {
			continue
		}
		pt := pts[ch.Points[0]]
		name := "all sequences"
		if w := p.eval.Windows; !pooled && w != nil {
			name = w.Series.Seqs[w.Origin[pt.seq].Seq].ID
		} else if !pooled {
			name = p.eval.Seqs[pt.seq].ID
		}
		if len(horizons) > 1 {
			name += fmt.Sprintf(" (horizon %d)", pt.f.H)
		}
		out[c] = name
	}
	return out
}
