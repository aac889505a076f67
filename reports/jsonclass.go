package reports

import "github.com/rnnaudit/rnnaudit/audit/classify"

// This file: a classifier's part of the JSON report (docs/output.md,
// "Classifiers"): per forecast the probability, its limits and the
// prediction sets; in the summary the headline figures; and the
// "classification" object with every figure.

// jsonStepClass is a classifier's part of a forecast (all omitted for
// regression). A binary forecast has its probability of class 1 and its
// limits as numbers; a K-class one its K probabilities and limits as
// lists, and its label (the class index; its target is 1, the number
// the interval arithmetic compares with 1 - the label's score,
// classify.Multi).
type jsonStepClass struct {
	Probability   *fnum  `json:"probability,omitempty"`
	Probabilities []fnum `json:"probabilities,omitempty"`
	ProbLower     any    `json:"prob_lower,omitempty"`
	ProbUpper     any    `json:"prob_upper,omitempty"`
	Label         *int   `json:"label,omitempty"`
	Set           *[]int `json:"set,omitempty"`
	SplitSet      *[]int `json:"split_set,omitempty"`
}

func jsonStepClassOf(c *classify.Forecast) jsonStepClass {
	if c == nil {
		return jsonStepClass{}
	}
	if c.Lowers != nil {
		j := jsonStepClass{Probabilities: fnums(c.Probs), ProbLower: fnums(c.Lowers), ProbUpper: fnums(c.Uppers), Set: &c.Set, SplitSet: splitOf(c)}
		if c.Label >= 0 {
			j.Label = &c.Label
		}
		return j
	}
	p, lo, up := fnum(c.Probs[len(c.Probs)-1]), fnum(c.ProbLower), fnum(c.ProbUpper)
	j := jsonStepClass{Probability: &p, ProbLower: &lo, ProbUpper: &up, Set: &c.Set}
	if c.Split != nil {
		j.SplitSet = &c.Split
	}
	return j
}

func splitOf(c *classify.Forecast) *[]int {
	if c.Split == nil {
		return nil
	}
	return &c.Split
}

// jsonSummaryClass are a classifier's headline figures in the summary.
type jsonSummaryClass struct {
	SetCoverage *fnum `json:"set_coverage,omitempty"`
	MeanSetSize *fnum `json:"mean_set_size,omitempty"`
	Brier       *fnum `json:"brier,omitempty"`
	LogLoss     *fnum `json:"log_loss,omitempty"`
	ECE         *fnum `json:"ece,omitempty"`
}

func jsonSummaryClassOf(s *classify.Summary) jsonSummaryClass {
	if s == nil {
		return jsonSummaryClass{}
	}
	f := func(x float64) *fnum { v := fnum(x); return &v }
	return jsonSummaryClass{SetCoverage: f(s.Jackknife.Coverage), MeanSetSize: f(s.Jackknife.MeanSize),
		Brier: f(s.Brier), LogLoss: f(s.LogLoss), ECE: f(s.ECE)}
}

// jsonClassification is classify.Summary.
type jsonClassification struct {
	Alpha       fnum          `json:"alpha"`
	Score       string        `json:"set_score"`
	Classes     int           `json:"classes"`
	Labelled    int           `json:"labelled"`
	Jackknife   jsonSets      `json:"jackknife_sets"`
	Split       *jsonSets     `json:"split_conformal_sets"`
	Brier       fnum          `json:"brier"`
	LogLoss     fnum          `json:"log_loss"`
	ECE         fnum          `json:"ece"`
	AUROC       fnum          `json:"auroc"`
	ProbWidth   fnum          `json:"mean_probability_interval_width"`
	Reliability []jsonBin     `json:"reliability"`
	FlagAbove   *jsonClassFlg `json:"flag_above"`
	FlagBelow   *jsonClassFlg `json:"flag_below"`
	Recommended *jsonSetRec   `json:"recommended_sets,omitempty"`
}

// jsonSetRec is classify.SetRecommendation.
type jsonSetRec struct {
	Kind          string `json:"kind"`
	CalCoverage   fnum   `json:"calibration_coverage"`
	Holds         bool   `json:"holds"`
	JackknifeSize fnum   `json:"jackknife_mean_size"`
	SplitSize     fnum   `json:"split_mean_size"`
}

type jsonSets struct {
	Coverage  fnum       `json:"coverage"`
	MeanSize  fnum       `json:"mean_size"`
	Singleton fnum       `json:"singleton_share"`
	Empty     fnum       `json:"empty_share"`
	BySize    []jsonCell `json:"by_size"`
	ByClass   []jsonCell `json:"by_class"`
	ByStep    []jsonCell `json:"by_step"`
}

type jsonCell struct {
	Key      int  `json:"key"`
	N        int  `json:"n"`
	Coverage fnum `json:"coverage"`
	MeanSize fnum `json:"mean_size"`
}

type jsonBin struct {
	Lo        fnum `json:"lo"`
	Hi        fnum `json:"hi"`
	N         int  `json:"n"`
	MeanProb  fnum `json:"mean_probability"`
	Frequency fnum `json:"frequency"`
}

type jsonClassFlg struct {
	Threshold fnum `json:"threshold"`
	Flagged   int  `json:"flagged"`
	Precision fnum `json:"precision"`
	Recall    fnum `json:"recall"`
}

func jsonClassificationOf(s *classify.Summary) *jsonClassification {
	if s == nil {
		return nil
	}
	j := &jsonClassification{Alpha: fnum(s.Alpha), Score: string(s.Score), Classes: s.Classes, Labelled: s.Labelled,
		Jackknife: jsonSetsOf(s.Jackknife), Brier: fnum(s.Brier), LogLoss: fnum(s.LogLoss), ECE: fnum(s.ECE),
		AUROC: fnum(s.AUROC), ProbWidth: fnum(s.ProbWidth), FlagAbove: jsonClassFlagOf(s.FlagAbove), FlagBelow: jsonClassFlagOf(s.FlagBelow)}
	if s.Split != nil {
		sp := jsonSetsOf(*s.Split)
		j.Split = &sp
	}
	if r := s.Recommended; r != nil && r.Kind != "" {
		j.Recommended = &jsonSetRec{Kind: r.Kind, CalCoverage: fnum(r.CalCoverage), Holds: r.Holds,
			JackknifeSize: fnum(r.JackknifeSize), SplitSize: fnum(r.SplitSize)}
	}
	for _, b := range s.Reliability {
		j.Reliability = append(j.Reliability, jsonBin{Lo: fnum(b.Lo), Hi: fnum(b.Hi), N: b.N, MeanProb: fnum(b.MeanProb), Frequency: fnum(b.Frequency)})
	}
	return j
}

func jsonSetsOf(f classify.SetFigures) jsonSets {
	cells := func(cs []classify.Cell) []jsonCell {
		out := []jsonCell{}
		for _, c := range cs {
			out = append(out, jsonCell{Key: c.Key, N: c.N, Coverage: fnum(c.Coverage), MeanSize: fnum(c.MeanSize)})
		}
		return out
	}
	return jsonSets{Coverage: fnum(f.Coverage), MeanSize: fnum(f.MeanSize), Singleton: fnum(f.Singleton), Empty: fnum(f.Empty),
		BySize: cells(f.BySize), ByClass: cells(f.ByClass), ByStep: cells(f.ByStep)}
}

func jsonClassFlagOf(f *classify.Flag) *jsonClassFlg {
	if f == nil {
		return nil
	}
	return &jsonClassFlg{Threshold: fnum(f.Threshold), Flagged: f.Flagged, Precision: fnum(f.Precision), Recall: fnum(f.Recall)}
}
