package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// longDir holds four long series and an RNN trained on them (audit's
// testdata; make.py there).
const longDir = "../../audit/testdata/longseries"

// TestServeStreamEqualsBatch: series A of the long-series test file,
// sent to POST /v1/stream one row per request with the label of the
// row before (labels fed back), gets at every row the limits
// of every kind, the adaptive ones included, that a batch audit predict
// of the whole labelled series gives (to 1e-12): the adaptive state (ACI's working
// level, AgACI's weights, NexCP's and the rolling window's scores, ACI
// clipped's level, quantile tracking's and conformal PID's quantiles) is
// carried by the labels the stream received, and the recurrent state
// runs on from the training series A, as in the batch predict
// (TestFitPredictContinued). Without the labels ACI's working
// level would stay at alpha; the test checks that it moved.
func TestServeStreamEqualsBatch(t *testing.T) {
	dir := t.TempDir()
	art := filepath.Join(dir, "long.rna")
	model := filepath.Join(longDir, "model.onnx")
	if code, _, errs := runCmd("fit", "--save", art, "--model", model, "--data", filepath.Join(longDir, "train.csv"),
		"--blocks", "interval", "--block-length", "40", "--adaptive", "--quiet"); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errs)
	}
	// Series A's first 60 test rows, as a CSV file for the batch predict.
	recs := readRows(t, filepath.Join(longDir, "test.csv"))
	var rows [][]string
	for _, r := range recs[1:] {
		if r[0] == "A" && len(rows) < 60 {
			rows = append(rows, r)
		}
	}
	var csv strings.Builder
	csv.WriteString(strings.Join(recs[0], ",") + "\n")
	for _, r := range rows {
		csv.WriteString(strings.Join(r, ",") + "\n")
	}
	data, js := filepath.Join(dir, "a.csv"), filepath.Join(dir, "a.json")
	if err := os.WriteFile(data, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCmd("predict", "--load", art, "--model", model, "--data", data, "--out", js, "--quiet"); code != 0 {
		t.Fatalf("predict: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	batch := decodeSequences(t, b)
	if len(batch) != 1 {
		t.Fatalf("batch: %d sequences", len(batch))
	}
	want := batch[0].(map[string]any)["steps"].([]any)
	if len(want) != len(rows) {
		t.Fatalf("batch: %d steps for %d rows", len(want), len(rows))
	}

	ts := startServerFor(t, art, model)
	alphas := map[string]bool{}
	for k, r := range rows {
		req := []string{fmt.Sprintf(`{"t": %s, "features": [%s]}`, r[1], r[2])}
		if k > 0 {
			req = append(req, fmt.Sprintf(`{"t": %s, "target": %s}`, rows[k-1][1], rows[k-1][3]))
		}
		body := fmt.Sprintf(`{"sequences": [{"id": "A", "rows": [%s]}]}`, strings.Join(req, ", "))
		status, _, ans := ts.postTo(t, "/v1/stream", []byte(body))
		if status != 200 {
			t.Fatalf("row %d: status %d: %v", k, status, ans["error"])
		}
		seqs := ans["sequences"].([]any)
		steps := seqs[0].(map[string]any)["steps"].([]any)
		if len(steps) != 1 {
			t.Fatalf("row %d: %d steps answered, want the new row's one", k, len(steps))
		}
		got, w := steps[0].(map[string]any), want[k].(map[string]any)
		for key, v := range got {
			if !sameValue(v, w[key]) {
				t.Errorf("row %d (t %s): %s = %v, batch predict %v", k, r[1], key, v, w[key])
			}
		}
		for _, key := range []string{"aci_lower", "agaci_lower", "nexcp_lower", "rolling_lower", "aci_clipped_lower", "qt_lower", "pid_lower", "pid_quantile"} {
			if _, ok := got[key]; !ok {
				t.Fatalf("row %d: no %s in the answer", k, key)
			}
		}
		alphas[fmt.Sprint(got["aci_alpha"])] = true
		info := ans["streams"].([]any)[0].(map[string]any)
		if info["rows"] != float64(k+1) || info["labelled"] != float64(k) {
			t.Errorf("row %d: the server holds %v rows, %v labelled; want %d, %d", k, info["rows"], info["labelled"], k+1, k)
		}
	}
	if len(alphas) < 2 {
		t.Errorf("ACI's working level took %d value(s) over %d rows: the labels did not reach it", len(alphas), len(rows))
	}
}

// sameValue says whether two decoded JSON values are equal, numbers to
// 1e-12 relative: the stream's forward passes run over the rows so far,
// the batch's over the whole series, whose kernels may round the last
// bits differently.
func sameValue(a, b any) bool {
	x, okx := a.(float64)
	y, oky := b.(float64)
	if okx && oky {
		return x == y || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y))
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}
