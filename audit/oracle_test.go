package audit_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// oracleWidth is the mean width of the test-set oracle intervals: at each
// step, prediction ± the (1 - alpha) quantile of |y - f| over the test
// set's values at that step (the narrowest constant-width intervals that
// cover 1 - alpha of them), averaged over the labelled values.
func oracleWidth(res *audit.Result, alpha float64) float64 {
	byStep := map[int][]float64{}
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			if st.Target != nil {
				byStep[st.Row] = append(byStep[st.Row], math.Abs(*st.Target-st.Prediction))
			}
		}
	}
	sum, n := 0.0, 0
	for _, v := range byStep {
		slices.Sort(v)
		q := v[min(len(v)-1, int(math.Ceil((1-alpha)*float64(len(v))))-1)]
		sum += 2 * q * float64(len(v))
		n += len(v)
	}
	return sum / float64(n)
}

// TestSmallDataWidth audits the small synthetic model (100 training
// sequences, ridge 10) with the defaults (Newton estimator, Gauss-Newton
// curvature): the mean width is within 1.3 times the test-set oracle
// width either way, the pooled coverage is near the target, no interval
// or block is unbounded, and the leverage per step lies in [0, 1) and
// grows over the sequence (the noise, and what the model memorises of it,
// grows with t). Measured: width 1.00 times the oracle, coverage 0.893.
func TestSmallDataWidth(t *testing.T) {
	g, err := onnx.Load(filepath.Join(exampleDir, "model_small.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(filepath.Join(exampleDir, "train_small.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	test, err := blocks.ReadFile(filepath.Join(exampleDir, "test_small.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := audit.Run(context.Background(), g, train, test, &audit.Options{Layout: graph.BatchFirst, Ridge: exampleRidge})
	if err != nil {
		t.Fatal(err)
	}
	s, d := res.Summary, res.Diag
	oracle := oracleWidth(res, 0.1)
	t.Logf("estimator %s, curvature %s, damping %g: coverage %.3f, mean width %.3f, oracle %.3f (ratio %.2f); leverage per step %.3f",
		res.Setting.Estimator, res.Setting.Curvature, res.Setting.Damping, s.Coverage, s.MeanLength, oracle, s.MeanLength/oracle, d.LeveragePerStep)
	if res.Setting.Estimator != "newton" || res.Setting.Curvature != "gauss-newton" {
		t.Errorf("defaults: estimator %s, curvature %s", res.Setting.Estimator, res.Setting.Curvature)
	}
	if r := s.MeanLength / oracle; r > 1.3 || r < 1/1.3 {
		t.Errorf("mean width %.3f is %.2f times the oracle width %.3f, want within 1.3 either way", s.MeanLength, r, oracle)
	}
	if s.Coverage < 0.85 || s.Coverage > 0.95 {
		t.Errorf("coverage %.3f, want near 0.9", s.Coverage)
	}
	if s.Infinite != 0 || d.UnboundedBlocks != 0 {
		t.Errorf("%d infinite intervals, %d unbounded blocks", s.Infinite, d.UnboundedBlocks)
	}
	if len(d.LeveragePerStep) != 10 {
		t.Fatalf("leverage per step %v, want 10 steps", d.LeveragePerStep)
	}
	for _, v := range d.LeveragePerStep {
		if !(v >= 0 && v < 1) {
			t.Errorf("leverage %v outside [0, 1)", d.LeveragePerStep)
		}
	}
	if d.LeveragePerStep[9] <= d.LeveragePerStep[0] {
		t.Errorf("leverage does not grow from step 1 (%.3f) to step 10 (%.3f)", d.LeveragePerStep[0], d.LeveragePerStep[9])
	}
}
