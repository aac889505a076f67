package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// paramsDir holds exports of parameters and outputs as practitioners
// write them, built by make_params.py there.
const paramsDir = "../../onnx/testdata/params"

// intervalsOf runs the audit with args and returns its summary and the
// prediction, lower and upper limit of every forecast.
func intervalsOf(t *testing.T, args ...string) (string, [][3]float64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.csv")
	code, stdout, stderr := runCmd(append(args, "--out", out)...)
	if code != 0 {
		t.Fatalf("audit %v: exit %d: %s", args, code, stderr)
	}
	rows := readRows(t, out)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var got [][3]float64
	for _, r := range rows[1:] {
		var v [3]float64
		for k, name := range []string{"prediction", "lower", "upper"} {
			x, err := strconv.ParseFloat(r[col[name]], 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			v[k] = x
		}
		got = append(got, v)
	}
	return stdout, got
}

// TestStandardisedGRUAudit: a GRU whose export standardises its inputs
// with stored statistics (trained with Adam, weight_decay 1e-3: --ridge
// 0.36 over 360 terms) is audited on its 101 trained values: its
// intervals equal those of the same model with the statistics left out
// by --params, and those of its export by the Python bridge (whose
// metadata names the trained initializers); its forecasts are
// PyTorch's in float64; and the summary gives no ridge advice, which the
// statistics taken as parameters caused (a ridge of 0.0015 "explained"
// their gradient).
func TestStandardisedGRUAudit(t *testing.T) {
	base := []string{"--data", filepath.Join(paramsDir, "train.csv"), "--test", filepath.Join(paramsDir, "test.csv"), "--ridge", "0.36"}
	gru := filepath.Join(paramsDir, "gru_std.onnx")
	summary, ref := intervalsOf(t, append([]string{"--model", gru}, base...)...)
	for _, bad := range []string{"ridge of", "see the warnings"} {
		if strings.Contains(summary, bad) {
			t.Errorf("the summary says %q:\n%s", bad, summary)
		}
	}
	if !strings.Contains(summary, "dense: 101 parameters") {
		t.Errorf("the summary does not audit 101 parameters:\n%s", summary)
	}
	for _, other := range [][]string{
		{"--model", gru, "--params", "!mean,!std"},
		{"--model", gru, "--params", "head.bias,onnx::GRU_114,onnx::GRU_115,onnx::GRU_116,onnx::MatMul_117"},
		{"--model", filepath.Join(paramsDir, "gru_std_bridge.onnx")},
	} {
		_, got := intervalsOf(t, append(other, base...)...)
		if len(got) != len(ref) || len(ref) != 120 {
			t.Fatalf("%v: %d forecasts, want %d (120)", other, len(got), len(ref))
		}
		worst := 0.0
		for i := range ref {
			for k := range 3 {
				worst = math.Max(worst, math.Abs(got[i][k]-ref[i][k]))
			}
		}
		if worst > 1e-12 {
			t.Errorf("%v: limits differ by up to %.3g from the audit by rule", other, worst)
		}
	}
	// The first test sequence's forecasts are PyTorch's in float64.
	b, err := os.ReadFile(filepath.Join(paramsDir, "params.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		GRU struct {
			Forecast []float64 `json:"test_forecast"`
		} `json:"gru_std"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for i, want := range doc.GRU.Forecast {
		if d := math.Abs(ref[i][0] - want); d > 1e-10 {
			t.Errorf("forecast %d: %.15g, PyTorch %.15g", i, ref[i][0], want)
		}
	}
}

// TestSeveralOutputsChosen: a model returning (attention weights
// [batch, time], forecast [batch]) with no --output is audited on the
// forecast, the output that fits the training targets: the summary's
// first line says so with how each output fits, and its forecasts are
// PyTorch's; audit fit records the choice for predict. When no output
// fits (--horizons 3: neither holds three forecasts) the audit is
// refused, naming --output.
func TestSeveralOutputsChosen(t *testing.T) {
	base := []string{"--model", filepath.Join(paramsDir, "attn_two.onnx"), "--data", filepath.Join(paramsDir, "train.csv"), "--ridge", "0.03"}
	summary, got := intervalsOf(t, append(base, "--test", filepath.Join(paramsDir, "test.csv"))...)
	first, _, _ := strings.Cut(summary, "\n")
	for _, want := range []string{"Forecast output: forecast, chosen among the model's 2 outputs", "not audited: attention (training RMSE "} {
		if !strings.Contains(first, want) {
			t.Errorf("the summary's first line lacks %q:\n%s", want, summary)
		}
	}
	b, err := os.ReadFile(filepath.Join(paramsDir, "params.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Attn struct {
			Forecast []float64 `json:"test_forecast"`
		} `json:"attn_two"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || len(doc.Attn.Forecast) != 1 || math.Abs(got[0][0]-doc.Attn.Forecast[0]) > 1e-10 {
		t.Errorf("%d forecasts, the first %v; PyTorch's forecast output %v", len(got), got[0], doc.Attn.Forecast)
	}

	save := filepath.Join(t.TempDir(), "a.rna")
	code, out, errs := runCmd(append([]string{"fit", "--save", save}, base...)...)
	if code != 0 || !strings.HasPrefix(out, "Forecast output: forecast, chosen") {
		t.Fatalf("fit: exit %d, stderr %s:\n%s", code, errs, out)
	}
	pred := filepath.Join(t.TempDir(), "p.csv")
	if code, _, errs := runCmd("predict", "--load", save, "--data", filepath.Join(paramsDir, "test.csv"), "--out", pred, "--quiet"); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	if rows := readRows(t, pred); len(rows) != 11 {
		t.Errorf("predict: %d rows, want the 10 forecasts of the forecast output", len(rows)-1)
	}

	code, _, errs = runCmd(append(base, "--horizons", "3", "--quiet")...)
	if code != 2 || !strings.Contains(errs, "none reads as a forecast of the training targets") || !strings.Contains(errs, "--output NAME") ||
		!strings.Contains(errs, "attention (does not fit: ") || !strings.Contains(errs, "forecast (does not fit: ") {
		t.Errorf("--horizons 3: exit %d, stderr %s", code, errs)
	}
}

// TestUntrainedNamed: a GRU reading tanh of its standardised inputs
// (the statistics feed no linear layer, so no rule makes them
// constants): the stationarity check names both statistics with the
// --params flag that leaves them out, instead of advising another ridge;
// audited with that flag, the warning is gone.
func TestUntrainedNamed(t *testing.T) {
	base := []string{"--model", filepath.Join(paramsDir, "gru_tanh_std.onnx"), "--data", filepath.Join(paramsDir, "train.csv"), "--test", filepath.Join(paramsDir, "test.csv"), "--ridge", "0.36"}
	summary, _ := intervalsOf(t, base...)
	if !strings.Contains(summary, "warning: Some parameters do not look trained: mean (") || !strings.Contains(summary, "; std (") ||
		!strings.Contains(summary, "leave them out: --params '!mean,!std'.") || strings.Contains(summary, "ridge of") {
		t.Errorf("the summary does not name the statistics:\n%s", summary)
	}
	summary, _ = intervalsOf(t, append(base, "--params", "!mean,!std")...)
	if strings.Contains(summary, "do not look trained") || !strings.Contains(summary, "dense: 101 parameters") {
		t.Errorf("with the statistics left out:\n%s", summary)
	}
}

// TestMaskAndPositionTable: causal self-attention with a sinusoidal
// position table and a mask of 0 and -inf, both PyTorch buffers, then a
// GRU: it loads (the mask's -inf was refused as a diverged training),
// the table and the mask are constants (137 parameters, PyTorch's
// trained values), its forecasts are PyTorch's in float64 and every
// limit is finite.
func TestMaskAndPositionTable(t *testing.T) {
	summary, got := intervalsOf(t, "--model", filepath.Join(paramsDir, "masked_attn.onnx"), "--data", filepath.Join(paramsDir, "train.csv"),
		"--test", filepath.Join(paramsDir, "test.csv"), "--ridge", "0.36")
	if !strings.Contains(summary, "dense: 137 parameters") {
		t.Errorf("not 137 parameters:\n%s", summary)
	}
	b, err := os.ReadFile(filepath.Join(paramsDir, "params.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		M struct {
			Forecast []float64 `json:"test_forecast"`
		} `json:"masked_attn"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.M.Forecast) != 12 || len(got) != 120 {
		t.Fatalf("%d reference forecasts, %d audited", len(doc.M.Forecast), len(got))
	}
	for i, want := range doc.M.Forecast {
		if math.Abs(got[i][0]-want) > 1e-10 {
			t.Errorf("forecast %d: %.15g, PyTorch %.15g", i, got[i][0], want)
		}
	}
	for i, v := range got {
		if math.IsInf(v[1], 0) || math.IsInf(v[2], 0) || math.IsNaN(v[1]) || math.IsNaN(v[2]) {
			t.Errorf("forecast %d: limits [%g, %g]", i, v[1], v[2])
		}
	}
	_, out, _ := runCmd("inspect", "--model", filepath.Join(paramsDir, "masked_attn.onnx"))
	for _, want := range []string{"pe    a sinusoidal position table", "mask  a mask: every value is 0 or infinite"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
}
