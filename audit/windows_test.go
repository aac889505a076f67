package audit_test

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// windowsFixture loads testdata/windows (make.py): a many-to-one RNN of
// 33 parameters trained on the 104 windows of 6 rows of one AR(1) series
// of 110 rows, with ridge w N = 0.104, and the 40 later rows.
func windowsFixture(t *testing.T) (*graph.Graph, *blocks.Dataset, *blocks.Dataset) {
	t.Helper()
	dir := filepath.Join("testdata", "windows")
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ro := &blocks.Options{Features: []string{"y"}, Shift: 1}
	train, err := blocks.ReadFile(filepath.Join(dir, "train.csv"), ro)
	if err != nil {
		t.Fatal(err)
	}
	test, err := blocks.ReadFile(filepath.Join(dir, "test.csv"), ro)
	if err != nil {
		t.Fatal(err)
	}
	return g, train, test
}

// TestWindowsForecasts checks the windows the audit cuts against
// PyTorch's forecasts of the test period (test_forecasts.csv): one
// forecast per test row with a next value, 39, each from the 6 rows
// before it, the first ones reaching back into the training series; and
// that the block length chosen from the residuals of this well-fitted
// AR model is the window's 6 rows (its residuals show no
// autocorrelation) and is said.
func TestWindowsForecasts(t *testing.T) {
	g, train, test := windowsFixture(t)
	res, err := audit.Run(context.Background(), g, train, test, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", "windows", "test_forecasts.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := map[float64][2]float64{}
	for _, r := range rows[1:] {
		var v [3]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(r[i], 64); err != nil {
				t.Fatal(err)
			}
		}
		want[v[0]] = [2]float64{v[1], v[2]}
	}
	got := 0
	for _, s := range res.Sequences {
		for _, st := range s.Steps {
			w, ok := want[st.Step]
			if !ok || st.Target == nil {
				t.Errorf("window %s: forecast at step %v (target %v) is not one of PyTorch's", s.ID, st.Step, st.Target)
				continue
			}
			got++
			if math.Abs(st.Prediction-w[0]) > 1e-9 || math.Abs(*st.Target-w[1]) > 1e-12 {
				t.Errorf("window %s: forecast %.12g of %v, PyTorch %.12g of %v", s.ID, st.Prediction, *st.Target, w[0], w[1])
			}
		}
	}
	if got != len(want) || len(want) != 39 {
		t.Errorf("%d forecasts matched of PyTorch's %d (want 39)", got, len(want))
	}
	// y is the feature and, one row on, the target: --shift 0 would
	// compare each forecast with the last value the model read, which
	// no forecast of the next value is far from. It is no alternative.
	if f := res.Diag.Fit; f == nil || len(f.Alternatives) != 1 || f.Alternatives[0].Shift != 2 {
		t.Errorf("fit check: %+v, want the one alternative --shift 2", f)
	}
	st := res.Setting
	if st.Blocks != "window" || st.TrainSeqs != 104 || st.BlockLength != 6 || st.NumBlocks != 19 || !strings.Contains(st.Windows, "Politis") {
		t.Errorf("setting: blocks %q of length %d (%d), %d training windows; %q", st.Blocks, st.BlockLength, st.NumBlocks, st.TrainSeqs, st.Windows)
	}
}

// TestWindowsRetrain re-trains window blocks of 3 rows exactly (each
// leaves out the up to 9 windows that use a row of its stretch) and
// checks that the Newton estimates of the same deletions agree: the
// deletion sets of the influence path (block gradients and terms) and of
// exact re-training (blocks.Block.Deletes) must be the same windows.
// Measured: cosines 0.9996 to 1.0000, step-length ratios within 1 ± 0.01.
func TestWindowsRetrain(t *testing.T) {
	if testing.Short() {
		t.Skip("re-trains 6 blocks exactly; not in -short")
	}
	g, train, test := windowsFixture(t)
	res, err := audit.Run(context.Background(), g, train, test, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6,
		BlockLength: 3, Retrain: 6, Seed: 1, Curvature: hvp.Hessian})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Setting; st.NumBlocks != 36 || st.BlockLength != 3 {
		t.Errorf("%d blocks of %d rows, want 36 of 3 (stretches [3, 6) to [108, 110) hold a window's last row)", st.NumBlocks, st.BlockLength)
	}
	rr := res.Retrain
	t.Logf("cosines %.4v, ratios %.4v", rr.Cosine, rr.NormRatio)
	if rr.MinCosine < 0.99 {
		t.Errorf("influence vs exact re-training of window blocks: min cosine %.4f, want >= 0.99", rr.MinCosine)
	}
	for _, r := range rr.NormRatio {
		if r < 0.95 || r > 1.05 {
			t.Errorf("|influence step| / |exact step| = %.4f, want within 1 ± 0.05", r)
		}
	}
}
