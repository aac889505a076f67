package reports

import (
	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
)

// The JSON of the audit's judgement: the verdict with its reasons, the
// column and ridge check, the damping sensitivity and the forecasts
// beyond the training steps (documented in doc.go).

type jsonJudgement struct {
	Level   string       `json:"level"`
	Text    string       `json:"text"`
	Reasons []jsonReason `json:"reasons"`
}

type jsonReason struct {
	Code   string `json:"code"`
	Level  string `json:"level"`
	Figure fnum   `json:"figure"`
	Bound  fnum   `json:"bound"`
	Count  int    `json:"count"`
	Ratio  fnum   `json:"ratio"`
	Steps  []int  `json:"steps,omitempty"`
	Text   string `json:"text"`
}

func jsonJudgementOf(r *audit.Result) jsonJudgement {
	level, text := verdict(r)
	out := jsonJudgement{Level: level, Text: text, Reasons: []jsonReason{}}
	for _, why := range r.Verdict.Reasons {
		out.Reasons = append(out.Reasons, jsonReason{Code: string(why.Code), Level: string(why.Level),
			Figure: fnum(why.Figure), Bound: fnum(why.Bound), Count: why.Count, Ratio: fnum(why.Ratio), Steps: why.Steps, Text: reasonText(r, why)})
	}
	return out
}

type jsonFit struct {
	Sequences      int               `json:"sequences"`
	RMSE           fnum              `json:"rmse"`
	Alternatives   []jsonAlternative `json:"alternatives"`
	Ridge          fnum              `json:"ridge"`
	GradNorm       fnum              `json:"gradient_norm"`
	FittedRidge    fnum              `json:"fitted_ridge"`
	FittedGradNorm fnum              `json:"fitted_gradient_norm"`
	Untrained      []jsonUntrained   `json:"untrained_parameters,omitempty"`
}

// jsonUntrained is a parameter tensor that does not look trained, with
// its gradient per value and the median tensor's.
type jsonUntrained struct {
	Name   string `json:"name"`
	RMS    fnum   `json:"gradient_rms"`
	Median fnum   `json:"median_gradient_rms"`
}

type jsonAlternative struct {
	Flags    string   `json:"flags"`
	Features []string `json:"features"`
	Shift    int      `json:"shift"`
	RMSE     fnum     `json:"rmse"`
}

func jsonFitOf(f *datacheck.FitCheck) *jsonFit {
	if f == nil {
		return nil
	}
	out := &jsonFit{Sequences: f.Sequences, RMSE: fnum(f.RMSE), Alternatives: []jsonAlternative{}, Ridge: fnum(f.Ridge),
		GradNorm: fnum(f.GradNorm), FittedRidge: fnum(f.FittedRidge), FittedGradNorm: fnum(f.FittedGradNorm)}
	for _, a := range f.Alternatives {
		out.Alternatives = append(out.Alternatives, jsonAlternative{Flags: a.Flags(), Features: a.Features, Shift: a.Shift, RMSE: fnum(a.RMSE)})
	}
	for _, u := range f.Untrained {
		out.Untrained = append(out.Untrained, jsonUntrained{Name: u.Name, RMS: fnum(u.RMS), Median: fnum(u.Median)})
	}
	return out
}

type jsonSensitivity struct {
	Computed   bool        `json:"computed"`
	Reason     string      `json:"reason,omitempty"`
	Rho        fnum        `json:"rho"`
	MeanLength fnum        `json:"mean_length"`
	Low        *jsonDamped `json:"low"`
	High       *jsonDamped `json:"high"`
	WidthShare fnum        `json:"width_share"`
	Bound      fnum        `json:"bound"`
	// On a random sample of the sequences only: how many of how many,
	// the audit's own mean width there (the shares' base) and the
	// standard error of width_share.
	Sampled      int   `json:"sampled_sequences,omitempty"`
	Sequences    int   `json:"of_sequences,omitempty"`
	SampleLength *fnum `json:"sample_mean_length,omitempty"`
	WidthShareSE *fnum `json:"width_share_se,omitempty"`
}

type jsonDamped struct {
	Rho        fnum `json:"rho"`
	MeanLength fnum `json:"mean_length"`
	Coverage   fnum `json:"coverage"`
	Infinite   int  `json:"infinite_intervals"`
}

func jsonSensitivityOf(d *audit.DampingSensitivity) *jsonSensitivity {
	if d == nil {
		return nil
	}
	out := &jsonSensitivity{Computed: d.Computed, Reason: d.Reason, Rho: fnum(d.Rho), MeanLength: fnum(d.Width),
		WidthShare: fnum(d.WidthShare()), Bound: fnum(audit.DampingShare)}
	if d.Computed {
		out.Low, out.High = jsonDampedOf(d.Low), jsonDampedOf(d.High)
	}
	if d.Sampled > 0 {
		w, se := fnum(d.SampleWidth), fnum(d.WidthShareSE())
		out.Sampled, out.Sequences, out.SampleLength, out.WidthShareSE = d.Sampled, d.Sequences, &w, &se
	}
	return out
}

func jsonDampedOf(f audit.DampedFigures) *jsonDamped {
	return &jsonDamped{fnum(f.Rho), fnum(f.MeanLength), fnum(f.Coverage), f.Infinite}
}

type jsonBeyond struct {
	FromRow   int `json:"from_row"`
	TrainRows int `json:"train_rows"`
	Forecasts int `json:"forecasts"`
	Labelled  int `json:"labelled"`
}

func jsonBeyondOf(b *audit.Beyond) *jsonBeyond {
	if b == nil {
		return nil
	}
	return &jsonBeyond{b.FromRow, b.TrainRows, b.Forecasts, b.Labelled}
}
