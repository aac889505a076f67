package reports

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ptr(x float64) *float64 { return &x }

// fixture is a small result that has every feature the reports show:
// unbounded limits, a missing target, NaN metrics (a step without
// targets, a flag that flagged nothing), warnings, notes, thresholds and
// a re-training comparison.
func fixture() *audit.Result {
	nan, inf := math.NaN(), math.Inf(1)
	r := &audit.Result{
		Model: audit.ModelInfo{Path: "models/glucose rnn.onnx", Opset: 14, Layout: "batch-first", Features: 2,
			Horizons: 1, Params: 97, ParamNames: []string{"rnn.weight_ih", "rnn.weight_hh", "head.weight", "head.bias"}},
		Setting: audit.Setting{Alpha: 0.1, Blocks: "sequence", NumBlocks: 12, Solver: "exact", SolverReason: "small-model", LossTerms: 96, Estimator: "infinitesimal", Curvature: "hessian",
			Damping: 0.01, Loss: "squared error", Seed: 1, TrainFile: "data/train.csv", TestFile: "data/test.csv",
			TrainSeqs: 12, TestSeqs: 3, Low: ptr(4), High: ptr(10), NominalCover: 0.9, GuaranteedMin: 0.8,
			Notes: []string{"2 blocks have no target and were left out."}},
		Summary: &audit.Summary{
			Coverage: 0.875, CoveragePerStep: []float64{1, 0.6666666666666666, 1, 1, 0.5, nan},
			PointsPerStep: []int{3, 3, 3, 3, 4, 0}, RMSEPerStep: []float64{0.5, 1, 1.5, 1, 1.75, nan},
			JointCoverage: 0.3333333333333333, MeanLength: 3.25, LengthPerStep: []float64{2, 2.5, 3, 3.5, 4, nan},
			Infinite: 2, Points: 16, RMSE: 1.2345678, IntervalScore: 4.5, Alpha: 0.1,
			Audit: interval.Audit{
				Low:  &interval.Threshold{Threshold: 4, Precision: nan, Recall: 0, Flagged: 0, True: 0, Actual: 1},
				High: &interval.Threshold{Threshold: 10, Precision: 0.75, Recall: 1, Flagged: 4, True: 3, Actual: 3},
			},
			Naive: audit.NaiveSummary{Coverage: 0.75, CoveragePerStep: []float64{1, 0.6666666666666666, 0.6666666666666666, 1, 0.5, nan},
				MeanLength: 2.5, LengthPerStep: []float64{1.5, 2, 2.5, 3, 3.5, nan}},
			Gap: 0.75, GapPerStep: []float64{0.5, 0.5, 0.5, 0.5, 0.5, nan},
		},
		Diag: audit.Diagnostics{
			GradNorm: 0.0123, BlockGradMedian: 0.5, Stationarity: 0.0246, Lambda: 0.02, Trace: 194.5,
			MinEig: -0.001, MaxEig: 57.25, InfluenceNorms: []float64{0.01, 0.02, 0.015, 0.03, 0.011, 0.012, 0.05, 0.013, 0.018, 0.021, 0.025, 0.014},
			Influential: []audit.InfluenceEntry{
				{Block: "sequence 7 (id P007)", Norm: 0.05, PredShift: 0.31},
				{Block: "sequence 4 (id P004)", Norm: 0.03, PredShift: 0.2},
			},
			Warnings: []audit.Warning{{Code: audit.Indefinite, Step: -1, Figure: -0.001, Bound: -0.0002, Count: 1}},
			Phases:   []audit.Phase{{Name: "prepare", Seconds: 0.004}, {Name: "block gradients", Seconds: 0.25}, {Name: "intervals", Seconds: 1.5}},
		},
		Calibration: []interval.CalibrationPoint{},
		Retrain: &audit.RetrainResult{Blocks: []string{"sequence 2 (id P002)", "sequence 9 (id P009)"},
			Cosine: []float64{0.98, 0.91}, MeanCosine: 0.945, MinCosine: 0.91, NormRatio: []float64{1.02, 0.95},
			PredCorrelation: 0.97, ExactCoverage: 0.86, InfluenceCoverage: 0.875, ExactLength: 3.3, InfluenceLength: 3.25,
			Iterations: []int{12, 15}, FinalGrad: []float64{1e-9, 2e-9}},
	}
	for k := 0; k < 10; k++ {
		a := 0.05 * float64(k+1)
		r.Calibration = append(r.Calibration, interval.CalibrationPoint{Alpha: a, Nominal: 1 - a, Coverage: math.Max(0, 1-1.2*a)})
	}
	ids := []string{"P101", "P102", "P103"}
	for i, id := range ids {
		s := audit.SequenceResult{ID: id}
		for t := 0; t < 6; t++ {
			pred := 5 + float64(i) + 1.5*math.Sin(float64(t+i))
			st := audit.StepResult{Row: t, Step: float64(t + 1), Prediction: pred,
				Lower: pred - 1.5 - 0.1*float64(t), Upper: pred + 1.5 + 0.1*float64(t),
				NaiveLower: pred - 1.2, NaiveUpper: pred + 1.2, M: 12}
			if t < 5 {
				st.Target = ptr(pred + 0.8*math.Cos(float64(3*t+i)))
			}
			s.Steps = append(s.Steps, st)
		}
		r.Sequences = append(r.Sequences, s)
	}
	r.Sequences[0].Steps[2].Upper = inf
	r.Sequences[1].Steps[4].Lower = -inf
	r.Verdict = audit.Judge(r)
	return r
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		line := 1 + bytes.Count(got[:commonPrefix(got, want)], []byte("\n"))
		t.Errorf("%s differs from the golden file at line %d (run go test -update after checking the change)", name, line)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
