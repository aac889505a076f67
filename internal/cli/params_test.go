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
