package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// FormatName and FormatVersion identify the JSON format; the version
// changes only when a field changes meaning or goes away (new fields may
// appear in any version). Version 2 made the warnings objects and moved
// the phase times from diagnostics.phases to the optional timings object.
const (
	FormatName    = "rnnaudit.report"
	FormatVersion = 3
)

// WriteJSON writes r as the JSON document described in the package
// documentation ("JSON format"): indented, with one forecast per line in
// "sequences". Infinite limits and NaN values (a precision with nothing
// flagged, a coverage at a step without targets) are written as null. The
// output depends only on r and o: the same result gives the same bytes,
// and the phase times, the one part of a result that changes from run to
// run, are left out unless o.Timings asks for them.
func WriteJSON(w io.Writer, r *audit.Result, o *Options) error {
	doc := jsonDoc{
		Format:  FormatName,
		Version: FormatVersion,
		Model: jsonModel{Path: r.Model.Path, Opset: r.Model.Opset, Layout: r.Model.Layout, Features: r.Model.Features,
			Horizons: r.Model.Horizons, ManyToOne: r.Model.ManyToOne, Params: r.Model.Params,
			ParamNames: orEmpty(r.Model.ParamNames)},
		Settings:    jsonSettingsOf(r, o),
		Summary:     jsonSummaryOf(r),
		Calibration: jsonCalibrationOf(r.Calibration),
		Diagnostics: jsonDiagOf(r),
		Retrain:     jsonRetrainOf(r.Retrain),
		Conformal:   jsonConformalOf(r),
		Adaptive:    jsonAdaptiveOf(r.Adaptive),
		Verdict:     jsonJudgementOf(r),
	}
	if o != nil && o.Timings {
		doc.Timings = jsonTimingsOf(&r.Diag)
	}
	doc.Scheme = jsonSchemeOf(r)
	doc.Classification = jsonClassificationOf(r.Classification)
	if doc.Summary != nil {
		doc.Summary.jsonSummaryClass = jsonSummaryClassOf(r.Classification)
	}
	head, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	// head ends in "\n}"; the sequences go before the closing brace, one
	// forecast per line.
	var b bytes.Buffer
	b.Write(head[:len(head)-2])
	b.WriteString(",\n  \"sequences\": [")
	for i, s := range r.Sequences {
		if i > 0 {
			b.WriteByte(',')
		}
		id, err := json.Marshal(s.ID)
		if err != nil {
			return fmt.Errorf("reports: %w", err)
		}
		fmt.Fprintf(&b, "\n    {\"id\": %s, \"steps\": [", id)
		for k := range s.Steps {
			if k > 0 {
				b.WriteByte(',')
			}
			line, err := json.Marshal(jsonStepOf(&s.Steps[k]))
			if err != nil {
				return fmt.Errorf("reports: %w", err)
			}
			b.WriteString("\n      ")
			b.Write(line)
		}
		if len(s.Steps) > 0 {
			b.WriteString("\n    ")
		}
		b.WriteString("]}")
	}
	if len(r.Sequences) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// fnum is a float64 that is written as null when it is not finite.
type fnum float64

// MarshalJSON writes null for NaN and infinities, and other values as
// encoding/json writes a float64 (appendJSONFloat).
func (f fnum) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return appendJSONFloat(make([]byte, 0, 24), x), nil
}

// appendJSONFloat appends the finite x to b as encoding/json writes a
// float64: the shortest representation that reads back as x, in 'e'
// notation below 1e-6 and from 1e21 on (with a one-digit negative
// exponent written without its leading zero), in 'f' notation otherwise.
// json.Marshal on each of a million influence norms was most of the
// seconds the JSON report took.
func appendJSONFloat(b []byte, x float64) []byte {
	format := byte('f')
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, x, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func fnums(v []float64) []fnum {
	if v == nil {
		return []fnum{}
	}
	out := make([]fnum, len(v))
	for i, x := range v {
		out[i] = fnum(x)
	}
	return out
}

type jsonDoc struct {
	Format      string           `json:"format"`
	Version     int              `json:"version"`
	Model       jsonModel        `json:"model"`
	Settings    jsonSettings     `json:"settings"`
	Summary     *jsonSummary     `json:"summary"`
	Calibration []jsonCalibPoint `json:"calibration"`
	Diagnostics jsonDiag         `json:"diagnostics"`
	Retrain     *jsonRetrain     `json:"retrain,omitempty"`
	Timings     *jsonTimings     `json:"timings,omitempty"`
	Conformal   *jsonConformal   `json:"conformal"`
	Adaptive    *jsonAdaptive    `json:"adaptive,omitempty"`
	Verdict     jsonJudgement    `json:"verdict"`
	Scheme      *jsonScheme      `json:"scheme_advice,omitempty"`
	// A classifier's figures (jsonclass.go; omitted for regression).
	Classification *jsonClassification `json:"classification,omitempty"`
}

// jsonModel mirrors audit.ModelInfo, so that the JSON format does not
// change with that type.
type jsonModel struct {
	Path       string   `json:"path"`
	Opset      int      `json:"opset"`
	Layout     string   `json:"layout"`
	Features   int      `json:"features"`
	Horizons   int      `json:"horizons"`
	ManyToOne  bool     `json:"many_to_one"`
	Params     int      `json:"parameters"`
	ParamNames []string `json:"parameter_tensors"`
}

type jsonSettings struct {
	Alpha       fnum   `json:"alpha"`
	Nominal     fnum   `json:"nominal_coverage"`
	Guaranteed  fnum   `json:"guaranteed_coverage"`
	Blocks      string `json:"blocks"`
	BlockLength int    `json:"block_length,omitempty"`
	NumBlocks   int    `json:"num_blocks"`
	// Pooling is how residuals are pooled ("position", or "rows" after
	// Warmup rows); omitted from older results.
	Pooling        string   `json:"pooling,omitempty"`
	Warmup         int      `json:"warmup,omitempty"`
	Solver         string   `json:"solver"`
	SolverReason   string   `json:"solver_reason"`
	SolverPredict  string   `json:"solver_prediction,omitempty"`
	LossTerms      int      `json:"loss_terms"`
	Estimator      string   `json:"estimator"`
	Curvature      string   `json:"curvature"`
	Damping        fnum     `json:"damping"`
	Loss           string   `json:"loss"`
	Ridge          fnum     `json:"ridge"`
	Seed           uint64   `json:"seed"`
	TrainFile      string   `json:"train_file"`
	TestFile       string   `json:"test_file,omitempty"`
	TrainSequences int      `json:"train_sequences"`
	TestSequences  int      `json:"test_sequences"`
	SelfAudit      bool     `json:"self_audit"`
	Low            *fnum    `json:"low"`
	High           *fnum    `json:"high"`
	Columns        *Columns `json:"columns,omitempty"`
	Notes          []string `json:"notes"`
}

func jsonSettingsOf(r *audit.Result, o *Options) jsonSettings {
	st := r.Setting
	s := jsonSettings{
		Alpha: fnum(st.Alpha), Nominal: fnum(st.NominalCover), Guaranteed: fnum(st.GuaranteedMin),
		Blocks: st.Blocks, BlockLength: st.BlockLength, NumBlocks: st.NumBlocks, Pooling: st.Pooling, Warmup: st.Warmup,
		Solver: st.Solver, SolverReason: st.SolverReason, SolverPredict: st.SolverPrediction, LossTerms: st.LossTerms, Estimator: st.Estimator, Curvature: st.Curvature, Damping: fnum(st.Damping), Loss: st.Loss, Ridge: fnum(st.Ridge), Seed: st.Seed,
		TrainFile: st.TrainFile, TestFile: st.TestFile, TrainSequences: st.TrainSeqs, TestSequences: st.TestSeqs,
		SelfAudit: r.SelfAudit, Notes: orEmpty(st.Notes),
	}
	if st.Low != nil {
		s.Low = fptr(*st.Low)
	}
	if st.High != nil {
		s.High = fptr(*st.High)
	}
	if o != nil {
		s.Columns = o.Columns
	}
	return s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type jsonSummary struct {
	Coverage        fnum        `json:"coverage"`
	CoveragePerStep []fnum      `json:"coverage_per_step"`
	PointsPerStep   []int       `json:"points_per_step"`
	JointCoverage   fnum        `json:"joint_coverage"`
	MeanLength      fnum        `json:"mean_length"`
	LengthPerStep   []fnum      `json:"length_per_step"`
	Infinite        int         `json:"infinite_intervals"`
	Points          int         `json:"points"`
	RMSE            fnum        `json:"rmse"`
	RMSEPerStep     []fnum      `json:"rmse_per_step"`
	IntervalScore   fnum        `json:"interval_score"`
	Alpha           fnum        `json:"alpha"`
	Audit           jsonAudit   `json:"audit"`
	Naive           jsonNaive   `json:"naive"`
	Gap             fnum        `json:"length_gap"`
	GapPerStep      []fnum      `json:"length_gap_per_step"`
	Nominal         fnum        `json:"nominal_coverage"`
	Guaranteed      fnum        `json:"guaranteed_coverage"`
	Verdict         jsonVerdict `json:"verdict"`
	// Per horizon, for a model with several (omitted otherwise).
	CoveragePerHorizon []fnum `json:"coverage_per_horizon,omitempty"`
	LengthPerHorizon   []fnum `json:"length_per_horizon,omitempty"`
	PointsPerHorizon   []int  `json:"points_per_horizon,omitempty"`
	// Beyond: the forecasts at steps no training sequence reaches, left
	// out of every figure above (null when none).
	Beyond *jsonBeyond `json:"beyond"`
	// OverTime: coverage along time (omitted from older results).
	OverTime *jsonOverTime `json:"over_time,omitempty"`
	// A classifier's headline figures (omitted for regression).
	jsonSummaryClass
}

type jsonVerdict struct {
	Level    string `json:"level"`
	Headline string `json:"headline"`
	Text     string `json:"text"`
}

type jsonAudit struct {
	Low  *jsonThreshold `json:"low"`
	High *jsonThreshold `json:"high"`
}

type jsonThreshold struct {
	Threshold fnum `json:"threshold"`
	Precision fnum `json:"precision"`
	Recall    fnum `json:"recall"`
	Flagged   int  `json:"flagged"`
	True      int  `json:"true_positives"`
	Actual    int  `json:"actual"`
}

type jsonNaive struct {
	Coverage        fnum   `json:"coverage"`
	CoveragePerStep []fnum `json:"coverage_per_step"`
	MeanLength      fnum   `json:"mean_length"`
	LengthPerStep   []fnum `json:"length_per_step"`
}

func jsonThresholdOf(t *interval.Threshold) *jsonThreshold {
	if t == nil {
		return nil
	}
	return &jsonThreshold{fnum(t.Threshold), fnum(t.Precision), fnum(t.Recall), t.Flagged, t.True, t.Actual}
}

func jsonSummaryOf(r *audit.Result) *jsonSummary {
	s := r.Summary
	if s == nil {
		return nil
	}
	level, text := verdict(r)
	return &jsonSummary{
		Verdict:  jsonVerdict{Level: level, Headline: headline(r), Text: text},
		Coverage: fnum(s.Coverage), CoveragePerStep: fnums(s.CoveragePerStep),
		PointsPerStep: s.PointsPerStep, JointCoverage: fnum(s.JointCoverage),
		MeanLength: fnum(s.MeanLength), LengthPerStep: fnums(s.LengthPerStep),
		Infinite: s.Infinite, Points: s.Points, RMSE: fnum(s.RMSE), RMSEPerStep: fnums(s.RMSEPerStep), IntervalScore: fnum(s.IntervalScore),
		Alpha: fnum(s.Alpha),
		Audit: jsonAudit{jsonThresholdOf(s.Audit.Low), jsonThresholdOf(s.Audit.High)},
		Naive: jsonNaive{fnum(s.Naive.Coverage), fnums(s.Naive.CoveragePerStep),
			fnum(s.Naive.MeanLength), fnums(s.Naive.LengthPerStep)},
		Gap: fnum(s.Gap), GapPerStep: fnums(s.GapPerStep),
		Nominal: fnum(1 - s.Alpha), Guaranteed: fnum(1 - 2*s.Alpha),
		CoveragePerHorizon: fnums(s.CoveragePerHorizon), LengthPerHorizon: fnums(s.LengthPerHorizon),
		PointsPerHorizon: s.PointsPerHorizon,
		Beyond:           jsonBeyondOf(s.Beyond),
		OverTime:         jsonOverTimeOf(s.OverTime),
	}
}

type jsonCalibPoint struct {
	Alpha    fnum `json:"alpha"`
	Nominal  fnum `json:"nominal"`
	Coverage fnum `json:"coverage"`
}

func jsonCalibrationOf(c []interval.CalibrationPoint) []jsonCalibPoint {
	out := make([]jsonCalibPoint, len(c))
	for i, p := range c {
		out[i] = jsonCalibPoint{fnum(p.Alpha), fnum(p.Nominal), fnum(p.Coverage)}
	}
	return out
}

type jsonDiag struct {
	GradNorm        fnum `json:"gradient_norm"`
	BlockGradMedian fnum `json:"block_gradient_median"`
	Stationarity    fnum `json:"stationarity_ratio"`
	Lambda          fnum `json:"lambda"`
	Trace           fnum `json:"trace"`
	MinEig          fnum `json:"min_eigenvalue"`
	MaxEig          fnum `json:"max_eigenvalue"`
	Iterations      int  `json:"max_iterations"`
	MaxResidual     fnum `json:"max_residual"`
	NegativeEigs    int  `json:"negative_eigenvalues"`
	// The low-rank solver's factor and leverage rule (absent for the
	// other solvers; added in version 3 without changing its fields).
	Rank               int             `json:"rank,omitempty"`
	Products           int             `json:"curvature_products,omitempty"`
	CurvatureSequences int             `json:"curvature_sequences,omitempty"`
	LeverageEstimate   *fnum           `json:"leverage_estimate,omitempty"`
	LeverageRule       string          `json:"leverage_rule,omitempty"`
	RefinedBlocks      int             `json:"refined_blocks,omitempty"`
	RefineSkipped      int             `json:"refine_skipped,omitempty"`
	RefineProducts     int             `json:"refine_products,omitempty"`
	LeveragePerStep    []fnum          `json:"leverage_per_step"`
	UnboundedBlocks    int             `json:"unbounded_blocks"`
	UnboundedLabels    []string        `json:"unbounded_block_labels"`
	InfluenceNorms     []fnum          `json:"influence_norms"`
	Influential        []jsonInfluence `json:"most_influential"`
	Warnings           []jsonWarning   `json:"warnings"`
	// Added in version 3 without changing other fields: the column and
	// ridge check and the damping sensitivity (null when not measured).
	Fit                *jsonFit         `json:"fit"`
	DampingSensitivity *jsonSensitivity `json:"damping_sensitivity"`
	EarlyStop          *jsonEarlyStop   `json:"early_stopping,omitempty"`
}

// jsonEarlyStop is refit.Proximal: how the early-stopping estimate's
// damping was chosen and how it agrees with budgeted re-fits.
type jsonEarlyStop struct {
	Budget   string   `json:"budget"`
	Source   string   `json:"source"`
	Start    string   `json:"start"`
	Lambda   fnum     `json:"lambda"`
	Rho      fnum     `json:"rho"`
	Derived  fnum     `json:"derived_lambda"`
	Blocks   []string `json:"refit_blocks"`
	Cosine   fnum     `json:"cosine"`
	RelError fnum     `json:"relative_error"`
}

type jsonInfluence struct {
	Block     string `json:"block"`
	Norm      fnum   `json:"norm"`
	PredShift fnum   `json:"prediction_shift"`
}

type jsonPhase struct {
	Name    string `json:"name"`
	Seconds fnum   `json:"seconds"`
	CPU     fnum   `json:"cpu_seconds"`
}

func jsonDiagOf(r *audit.Result) jsonDiag {
	d := &r.Diag
	out := jsonDiag{
		GradNorm: fnum(d.GradNorm), BlockGradMedian: fnum(d.BlockGradMedian), Stationarity: fnum(d.Stationarity),
		Lambda: fnum(d.Lambda), Trace: fnum(d.Trace), MinEig: fnum(d.MinEig), MaxEig: fnum(d.MaxEig),
		Iterations: d.Iterations, MaxResidual: fnum(d.MaxResidual),
		NegativeEigs: d.NegativeEigenvalues, LeveragePerStep: fnums(d.LeveragePerStep), UnboundedBlocks: d.UnboundedBlocks,
		UnboundedLabels: orEmpty(d.UnboundedLabels),
		InfluenceNorms:  fnums(d.InfluenceNorms),
		Influential:     make([]jsonInfluence, len(d.Influential)),
		Warnings:        make([]jsonWarning, len(d.Warnings)),
	}
	out.Rank, out.Products, out.CurvatureSequences, out.LeverageRule = d.Rank, d.Products, d.CurvatureSequences, d.LeverageRule
	out.RefinedBlocks, out.RefineSkipped, out.RefineProducts = d.RefinedBlocks, d.RefineSkipped, d.RefineProducts
	if d.LeverageRule != "" {
		v := fnum(d.LeverageEstimate)
		out.LeverageEstimate = &v
	}
	for i, e := range d.Influential {
		out.Influential[i] = jsonInfluence{e.Block, fnum(e.Norm), fnum(e.PredShift)}
	}
	for i, w := range d.Warnings {
		jw := jsonWarning{Code: string(w.Code), Figure: fnum(w.Figure), Bound: fnum(w.Bound), Count: w.Count, Ratio: fnum(w.Ratio)}
		if w.Step >= 0 {
			jw.Step = &w.Step
		}
		switch w.Code {
		case audit.StepCoverage:
			jw.Message = stepCoverageText([]audit.Warning{w})
		case audit.HighLeverage:
			jw.Message = highLeverageText([]audit.Warning{w})
		default:
			jw.Message = sentence(warningText(r, w))
		}
		out.Warnings[i] = jw
	}
	out.Fit, out.DampingSensitivity = jsonFitOf(d.Fit), jsonSensitivityOf(d.DampingSensitivity)
	if e := d.EarlyStop; e != nil {
		out.EarlyStop = &jsonEarlyStop{e.Budget, e.Source, e.Start, fnum(e.Lambda), fnum(e.Rho), fnum(e.Derived), orEmpty(e.Blocks), fnum(e.Cosine), fnum(e.RelError)}
	}
	return out
}

// jsonWarning is one typed warning with its figures and, for readers of
// the JSON alone, its sentence.
type jsonWarning struct {
	Code    string `json:"code"`
	Step    *int   `json:"step"` // row, null when about the whole audit
	Figure  fnum   `json:"figure"`
	Bound   fnum   `json:"bound"`
	Count   int    `json:"count"`
	Ratio   fnum   `json:"ratio"`
	Message string `json:"message"`
}

// jsonTimings are the wall and CPU times of the audit's phases: the one part of a
// result that differs between runs with the same inputs and seed, written
// only when Options.Timings asks for it.
type jsonTimings struct {
	Phases []jsonPhase `json:"phases"`
	Total  fnum        `json:"total_seconds"`
}

func jsonTimingsOf(d *audit.Diagnostics) *jsonTimings {
	t := &jsonTimings{Phases: make([]jsonPhase, len(d.Phases))}
	total := 0.0
	for i, p := range d.Phases {
		t.Phases[i] = jsonPhase{p.Name, fnum(p.Seconds), fnum(p.CPUSeconds)}
		total += p.Seconds
	}
	t.Total = fnum(total)
	return t
}

type jsonRetrain struct {
	Estimator         string   `json:"estimator"`
	Blocks            []string `json:"blocks"`
	Converged         []bool   `json:"converged"`
	Outcomes          []string `json:"outcomes"`
	NotConverged      int      `json:"not_converged"`
	NotRun            int      `json:"not_run"`
	FullIterations    int      `json:"full_refit_iterations"`
	FullGrad          fnum     `json:"full_refit_gradient_norm"`
	Tilted            bool     `json:"tilted"`
	Warm              bool     `json:"warm"`
	Budget            string   `json:"budget,omitempty"`
	Cosine            []fnum   `json:"cosine"`
	MeanCosine        fnum     `json:"mean_cosine"`
	MinCosine         fnum     `json:"min_cosine"`
	NormRatio         []fnum   `json:"norm_ratio"`
	PredCorrelation   fnum     `json:"prediction_change_correlation"`
	ExactCoverage     fnum     `json:"exact_coverage"`
	InfluenceCoverage fnum     `json:"influence_coverage"`
	ExactLength       fnum     `json:"exact_mean_length"`
	InfluenceLength   fnum     `json:"influence_mean_length"`
	Iterations        []int    `json:"iterations"`
	FinalGrad         []fnum   `json:"final_gradient_norm"`
}

func jsonRetrainOf(r *audit.RetrainResult) *jsonRetrain {
	if r == nil {
		return nil
	}
	it := r.Iterations
	if it == nil {
		it = []int{}
	}
	conv := r.Converged
	if conv == nil {
		conv = []bool{}
	}
	outcomes := []string{}
	for _, o := range r.Outcomes {
		outcomes = append(outcomes, string(o))
	}
	return &jsonRetrain{
		Estimator: r.Estimator, Blocks: orEmpty(r.Blocks), Converged: conv, Outcomes: outcomes, NotConverged: r.NotConverged, NotRun: r.NotRun,
		FullIterations: r.FullIterations, FullGrad: fnum(r.FullGrad), Tilted: r.Tilted, Warm: r.Warm, Budget: r.Budget, Cosine: fnums(r.Cosine), MeanCosine: fnum(r.MeanCosine), MinCosine: fnum(r.MinCosine),
		NormRatio: fnums(r.NormRatio), PredCorrelation: fnum(r.PredCorrelation),
		ExactCoverage: fnum(r.ExactCoverage), InfluenceCoverage: fnum(r.InfluenceCoverage),
		ExactLength: fnum(r.ExactLength), InfluenceLength: fnum(r.InfluenceLength),
		Iterations: it, FinalGrad: fnums(r.FinalGrad),
	}
}

// jsonStep is one forecast. Keys with omitempty appear only when they
// carry information.
type jsonStep struct {
	T              float64 `json:"t"`
	Horizon        int     `json:"horizon"`
	Prediction     fnum    `json:"prediction"`
	Lower          fnum    `json:"lower"`
	Upper          fnum    `json:"upper"`
	LowerUnbounded bool    `json:"lower_unbounded,omitempty"`
	UpperUnbounded bool    `json:"upper_unbounded,omitempty"`
	Target         *fnum   `json:"target,omitempty"`
	Covered        *bool   `json:"covered,omitempty"`
	NaiveLower     fnum    `json:"naive_lower"`
	NaiveUpper     fnum    `json:"naive_upper"`
	M              int     `json:"m"`

	// The calibrated limits, with a calibration set.
	jsonStepConformal
	// The limits that adapt along time, with Options.Adaptive.
	jsonStepAdaptive
	// A classifier's probability, its limits and sets.
	jsonStepClass
}

func jsonStepOf(s *audit.StepResult) jsonStep {
	j := jsonStep{
		T: s.Step, Horizon: s.Horizon, Prediction: fnum(s.Prediction),
		Lower: fnum(s.Lower), Upper: fnum(s.Upper),
		LowerUnbounded: math.IsInf(s.Lower, -1), UpperUnbounded: math.IsInf(s.Upper, 1),
		NaiveLower: fnum(s.NaiveLower), NaiveUpper: fnum(s.NaiveUpper), M: s.M,
		jsonStepConformal: jsonStepConformalOf(s.Conformal),
		jsonStepAdaptive:  jsonStepAdaptiveOf(s.Adaptive),
		jsonStepClass:     jsonStepClassOf(s.Class),
	}
	if s.Target != nil {
		y := fnum(*s.Target)
		c := s.Lower <= *s.Target && *s.Target <= s.Upper
		j.Target, j.Covered = &y, &c
	}
	return j
}
