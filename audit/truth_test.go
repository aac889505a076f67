package audit_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// exampleDir holds the paper's synthetic study (see its README.md): AR
// data and a vanilla RNN with 20 hidden units trained on train.csv with
// the ridge penalty below.
const exampleDir = "../examples/synthetic"

// exampleRidge is the penalty (ridge/2)|theta|^2 train.py trained with.
const exampleRidge = 10.0

// TestKnownTruth audits the trained RNN of the paper's synthetic study on
// 2000 fresh sequences of the same AR process (noise sd 0.1 t): at alpha =
// 0.1 the jackknife+ intervals must cover at least 1 - 2 alpha = 80%
// overall and come near the nominal 90% (at least 85%). Measured: 86.7%
// (naive in-sample intervals 84.9%); per step 0.88-0.89 up to t = 7, then
// 0.845, 0.843 and 0.775 at t = 10, the noisiest step, below 1 - 2 alpha.
// Not a data or quantile bug (the generator matches generate.py and
// train.csv has noise sd 0.1 t). The model memorises the late steps' noise:
// at t = 10 its training residual RMS is 0.76 for a noise sd of 1.0, the
// fresh residual RMS 1.19 (naive coverage 0.72). The leave-one-out models
// stay in theta_hat's basin and keep part of that memory: exactly
// re-trained blocks (warm-started from theta_hat, Retrain) raise the t = 10
// residual RMS only 1.24-1.31 times over the in-sample one, against 1.57 for
// fresh data, and their jackknife+ coverage at t = 10 (0.73 over 60 blocks)
// is no better than influence's on the same blocks (0.72). The 1 - 2 alpha
// guarantee needs re-training from scratch, which neither does; the
// per-step bound here is only a sanity check, and the audit warns about
// step 10.
func TestKnownTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("paper-scale audit (about 5 s); not in -short")
	}
	g, err := onnx.Load(filepath.Join(exampleDir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(filepath.Join(exampleDir, "train.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := arData("fresh", 2000, 10, 424242)
	res, err := audit.Run(context.Background(), g, train, fresh, &audit.Options{Layout: audit.BatchFirst, Ridge: exampleRidge})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	var per []string
	for i, c := range s.CoveragePerStep {
		per = append(per, fmt.Sprintf("t=%d %.3f", i+1, c))
	}
	t.Logf("coverage %.4f (naive %.4f), joint %.3f, mean length %.3f (naive %.3f), RMSE %.3f; per step: %s; warnings: %v",
		s.Coverage, s.Naive.Coverage, s.JointCoverage, s.MeanLength, s.Naive.MeanLength, s.RMSE, strings.Join(per, ", "), res.Diag.Warnings)
	if s.Points != 20000 {
		t.Fatalf("%d points, want 20000", s.Points)
	}
	if s.Coverage < 0.85 || s.Coverage > 0.95 {
		t.Errorf("coverage %.4f: want at least 1 - 2 alpha = 0.8 and near 0.9 (0.85 to 0.95)", s.Coverage)
	}
	if s.Coverage <= s.Naive.Coverage {
		t.Errorf("jackknife+ coverage %.4f not above the in-sample intervals' %.4f on an over-fitted model", s.Coverage, s.Naive.Coverage)
	}
	for i, c := range s.CoveragePerStep {
		if c < 0.7 {
			t.Errorf("step %d: coverage %.3f", i+1, c)
		}
	}
	// Step 10 is significantly below 1 - 2 alpha (0.775 of 2000 values,
	// two standard errors 0.018), and its fresh errors are 1.6 times its
	// training errors: exactly one warning, naming that step alone and
	// the memorisation.
	if len(res.Diag.Warnings) != 1 {
		t.Fatalf("want one warning (step 10's coverage), got %+v", res.Diag.Warnings)
	}
	w := res.Diag.Warnings[0]
	if w.Code != audit.StepCoverage || w.Step != 9 || w.Count != 2000 || math.Abs(w.Figure-0.775) > 0.0005 || math.Abs(w.Ratio-1.6) > 0.05 {
		t.Errorf("warning does not name step 10 alone (77.5%% of 2000 values) and its memorisation (ratio 1.6): %+v", w)
	}
}
