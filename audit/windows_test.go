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
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
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
// PyTorch's forecasts of the test period (test_forecasts.csv) and the
// hand-computed forecast of the first test value (first_forecast.csv):
// one forecast per test value, 40, each from the 6 rows before it, the
// first ones reaching back into the training series; and
// that the block length chosen from the residuals of this well-fitted
// AR model is the window's 6 rows (its residuals show no
// autocorrelation) and is said.
func TestWindowsForecasts(t *testing.T) {
	g, train, test := windowsFixture(t)
	res, err := audit.Run(context.Background(), g, train, test, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6})
	if err != nil {
		t.Fatal(err)
	}
	want := readForecasts(t, filepath.Join("testdata", "windows", "test_forecasts.csv"))
	if len(want) != 39 {
		t.Fatalf("%d reference forecasts, want PyTorch's 39", len(want))
	}
	// The first test value, forecast from the last 6 training rows.
	want[110] = readForecasts(t, filepath.Join("testdata", "windows", "first_forecast.csv"))[110]
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
	if got != len(want) || len(want) != 40 {
		t.Errorf("%d forecasts matched of the %d references (want 40)", got, len(want))
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

// readForecasts reads a reference file of windows' forecasts (step of the
// window's last row, forecast, target) into a map by step.
func readForecasts(t *testing.T, path string) map[float64][2]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[float64][2]float64{}
	for _, r := range rows[1:] {
		var v [3]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(r[i], 64); err != nil {
				t.Fatal(err)
			}
		}
		out[v[0]] = [2]float64{v[1], v[2]}
	}
	return out
}

// TestWindowsFirstValue checks that the first value after the training
// series (row 110, step 111) is forecast, by the window of the last 6
// training rows, against the RNN run by hand in numpy on the joined
// series (first_forecast.csv, make_first.py): 40 forecasts of the 40
// test values, where the window mode once gave 39.
func TestWindowsFirstValue(t *testing.T) {
	g, train, test := windowsFixture(t)
	res, err := audit.Run(context.Background(), g, train, test, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6})
	if err != nil {
		t.Fatal(err)
	}
	want := readForecasts(t, filepath.Join("testdata", "windows", "first_forecast.csv"))[110]
	if res.Summary.Points != 40 {
		t.Errorf("%d labelled test forecasts, want 40 (one per test value)", res.Summary.Points)
	}
	s := res.Sequences[0]
	if st := s.Steps[0]; st.Step != 110 || st.Target == nil || math.Abs(st.Prediction-want[0]) > 1e-9 || *st.Target != want[1] {
		t.Errorf("first window %s: forecast %.12g of %v at step %v, want %.12g of %v at step 110", s.ID, st.Prediction, st.Target, st.Step, want[0], want[1])
	}
}

// TestWindowsCalibrationStretch splits the fixture's later period into a
// calibration stretch of the same series (steps 111-130, id A) and a
// test period (steps 131-150), and checks that the calibration windows
// continue the training series (20 values: the first forecast from the
// last 6 training rows) and the test windows the calibration stretch
// (the first test value forecast from the calibration rows, against
// first_forecast.csv); and that the adaptive kinds run along the
// series' time: one chain of the 20 test windows, whose first ACI
// interval is the split-conformal one and whose working level then
// follows ACI's recursion from the covered flags in time order (with one
// chain per window, the level would stay at alpha).
func TestWindowsCalibrationStretch(t *testing.T) {
	g, train, later := windowsFixture(t)
	dir := t.TempDir()
	write := func(name string, lo, hi float64) *blocks.Dataset {
		var b strings.Builder
		b.WriteString("id,t,y\n")
		for _, s := range later.Seqs {
			for i, st := range s.Steps {
				if lo <= st && st <= hi {
					b.WriteString(s.ID + "," + strconv.FormatFloat(st, 'g', -1, 64) + "," + strconv.FormatFloat(s.X[i][0], 'g', -1, 64) + "\n")
				}
			}
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := blocks.ReadFile(path, &blocks.Options{Features: []string{"y"}, Shift: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cal, test := write("cal.csv", 111, 130), write("test.csv", 131, 150)
	const alpha, gamma = 0.1, 0.05
	res, err := audit.Run(context.Background(), g, train, test, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6,
		Calibration: cal, Adaptive: &adaptive.Options{Gamma: gamma}})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Conformal; c == nil || c.Values != 20 || c.Sequences != 20 {
		t.Fatalf("calibration: %+v, want 20 windows with 20 values", c)
	}
	if res.Summary.Points != 20 {
		t.Errorf("%d labelled test forecasts, want 20", res.Summary.Points)
	}
	want := readForecasts(t, filepath.Join("testdata", "windows", "first_forecast.csv"))[130]
	if st := res.Sequences[0].Steps[0]; st.Step != 130 || math.Abs(st.Prediction-want[0]) > 1e-9 || *st.Target != want[1] {
		t.Errorf("first test window: forecast %.12g of %v at step %v, want %.12g of %v at step 130", st.Prediction, *st.Target, st.Step, want[0], want[1])
	}
	a := res.Adaptive
	if a == nil || a.Chains != 1 || a.Longest != 20 || a.Source != "calibration" {
		t.Fatalf("adaptive: %+v, want one chain of 20 labelled forecasts on the calibration scores", a)
	}
	at := alpha
	for k, s := range res.Sequences {
		st := s.Steps[0]
		ad := st.Adaptive
		if k > 0 && st.Step <= res.Sequences[k-1].Steps[0].Step {
			t.Fatalf("windows out of time order: %v after %v", st.Step, res.Sequences[k-1].Steps[0].Step)
		}
		if math.Abs(ad.Alpha-at) > 1e-12 {
			t.Fatalf("window %s: alpha_t %g, want %g from the recursion along the series", s.ID, ad.Alpha, at)
		}
		if k == 0 && (math.Abs(ad.ACILower-st.Conformal.SplitLower) > 1e-12 || math.Abs(ad.ACIUpper-st.Conformal.SplitUpper) > 1e-12) {
			t.Fatalf("first ACI interval [%g, %g], split conformal [%g, %g]", ad.ACILower, ad.ACIUpper, st.Conformal.SplitLower, st.Conformal.SplitUpper)
		}
		y := *st.Target
		at += gamma * alpha
		if ad.Empty || y < ad.ACILower || y > ad.ACIUpper {
			at -= gamma
		}
	}
	if at == alpha+20*gamma*alpha {
		t.Errorf("every test value covered: the recursion was not exercised by a miss")
	}
	// Fit then Predict continues the test series through the calibration
	// stretch as Run does: the same windows and forecasts.
	fit, err := audit.Fit(context.Background(), g, train, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6, Calibration: cal})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := fit.Predict(context.Background(), test)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Sequences) != len(res.Sequences) {
		t.Fatalf("Predict: %d windows, Run %d", len(pr.Sequences), len(res.Sequences))
	}
	for k, s := range pr.Sequences {
		if a, b := s.Steps[0], res.Sequences[k].Steps[0]; s.ID != res.Sequences[k].ID || a.Prediction != b.Prediction || a.Lower != b.Lower || a.Upper != b.Upper {
			t.Errorf("Predict window %s: %v [%v, %v], Run %s: %v [%v, %v]", s.ID, a.Prediction, a.Lower, a.Upper, res.Sequences[k].ID, b.Prediction, b.Lower, b.Upper)
		}
	}
}

// TestWindowsSelfAudit audits the fixture's 104 training windows without
// test data, with window blocks of 6 rows, on the exact and the dual
// paths: each window's interval leaves out the residuals of its own
// block, the windows whose last row read is in its stretch of 6 rows (and
// so share its rows), not only its own. Worked by hand: the windows' last
// rows are 5 to 108; the stretch [0, 6) holds one (row 5), [108, 114)
// one (row 108), each of the 17 between six; so a window keeps 104 - 1 =
// 103 residuals at rows 5 and 108 and 104 - 6 = 98 elsewhere (103
// everywhere when only the window was left out).
func TestWindowsSelfAudit(t *testing.T) {
	g, train, _ := windowsFixture(t)
	for _, solver := range []audit.Solver{audit.Exact, audit.Dual} {
		res, err := audit.Run(context.Background(), g, train, nil, &audit.Options{Layout: graph.BatchFirst, Ridge: 0.104, Window: 6, Solver: solver})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Sequences) != 104 || res.Setting.NumBlocks != 19 {
			t.Fatalf("%s: %d windows in %d blocks, want 104 in 19", solver, len(res.Sequences), res.Setting.NumBlocks)
		}
		for i, s := range res.Sequences {
			want := 98
			if i == 0 || i == 103 {
				want = 103
			}
			if m := s.Steps[0].M; m != want {
				t.Errorf("%s: window %s (last row %d) keeps %d residuals, want %d", solver, s.ID, i+5, m, want)
			}
		}
	}
}
