package audit

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// scaledTargets returns d with every target y replaced by mean + std*y.
func scaledTargets(d *blocks.Dataset, mean, std float64) *blocks.Dataset {
	out := *d
	out.Seqs = make([]*blocks.Sequence, len(d.Seqs))
	for i, s := range d.Seqs {
		c := *s
		c.Y = make([][]float64, len(s.Y))
		for t, y := range s.Y {
			if y != nil {
				c.Y[t] = []float64{mean + std*y[0]}
			}
		}
		out.Seqs[i] = &c
	}
	return &out
}

// TestTargetScale: a model trained on targets y (examples/synthetic,
// ridge 10), audited on data holding 50 + 20 y with TargetScale {50, 20},
// gives the audit of the original data mapped by v -> 50 + 20 v (the
// jackknife+ is equivariant under an increasing affine map once the
// ridge is scaled with the loss by 20²): every prediction and limit to
// 1e-9 relative, widths and RMSE 20 times, coverage and the flag
// figures of --low 0 / --low 50 identical, the ridge reported as given.
func TestTargetScale(t *testing.T) {
	const mean, std = 50.0, 20.0
	g, err := onnx.Load(filepath.Join("..", "examples", "synthetic", "model_small.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(filepath.Join("..", "examples", "synthetic", "train_small.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	test, err := blocks.ReadFile(filepath.Join("..", "examples", "synthetic", "test_small.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	low, lowU := 2.0, mean+std*2.0
	a, err := Run(context.Background(), g, train, test, &Options{Layout: graph.BatchFirst, Ridge: 10, Low: &low})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), g, scaledTargets(train, mean, std), scaledTargets(test, mean, std),
		&Options{Layout: graph.BatchFirst, Ridge: 10, Low: &lowU, TargetScale: []float64{mean, std}})
	if err != nil {
		t.Fatal(err)
	}
	close := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
			t.Errorf("%s: %.15g, want %.15g", what, got, want)
		}
	}
	n := 0
	for i, s := range a.Sequences {
		for k, st := range s.Steps {
			u := b.Sequences[i].Steps[k]
			close("prediction", u.Prediction, mean+std*st.Prediction)
			close("lower", u.Lower, mean+std*st.Lower)
			close("upper", u.Upper, mean+std*st.Upper)
			close("naive upper", u.NaiveUpper, mean+std*st.NaiveUpper)
			n++
		}
	}
	if n == 0 || a.Summary.Coverage != b.Summary.Coverage || a.Summary.Points != b.Summary.Points || a.Verdict.Level != b.Verdict.Level {
		t.Errorf("%d forecasts; coverage %v/%v, points %d/%d, verdict %s/%s", n, a.Summary.Coverage, b.Summary.Coverage, a.Summary.Points, b.Summary.Points, a.Verdict.Level, b.Verdict.Level)
	}
	close("mean width", b.Summary.MeanLength, std*a.Summary.MeanLength)
	close("RMSE", b.Summary.RMSE, std*a.Summary.RMSE)
	if b.Setting.Ridge != 10 || b.Diag.Fit == nil || b.Diag.Fit.Ridge != 10 {
		t.Errorf("ridge reported as %v (fit check %+v), want the 10 given", b.Setting.Ridge, b.Diag.Fit)
	}
	close("fitted ridge", b.Diag.Fit.FittedRidge, a.Diag.Fit.FittedRidge)
	if len(b.Model.Assumed) != 1 || b.Model.Assumed[0] != "Forecasts are in the target's units: 50 + 20 × the model's output, which was trained on (y - 50) / 20 (--target-scale); intervals, thresholds and figures are in those units." {
		t.Errorf("notes %q", b.Model.Assumed)
	}
	fa, fb := a.Summary.Audit.Low, b.Summary.Audit.Low
	if fa == nil || fb == nil || fa.Flagged == 0 || fa.Flagged != fb.Flagged || fa.True != fb.True || fa.Actual != fb.Actual || fb.Threshold != lowU {
		t.Errorf("flags of --low: %+v and %+v", fa, fb)
	}
}
