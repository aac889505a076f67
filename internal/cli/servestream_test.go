package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// longDir holds four long series and an RNN trained on them (audit's
// testdata; make.py there).
const longDir = "../../audit/testdata/longseries"

// TestServeStreamEqualsBatch: series A of the long-series test file,
// sent to POST /v1/stream one row per request with the label of the
// row before (issue 23: labels fed back), gets at every row the limits
// of every kind, the adaptive ones included, that a batch audit predict
// of the whole labelled series gives (to 1e-12): the adaptive state (ACI's working
// level, AgACI's weights, NexCP's and the rolling window's scores) is
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

	ts := startServerFor(t, art, model, nil)
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
		for _, key := range []string{"aci_lower", "agaci_lower", "nexcp_lower", "rolling_lower"} {
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

// TestServeStreamRefusals: a stream's rows are added in time order, a
// label needs its row, a row is sent once, and the streams held are
// bounded (the least recently used dropped).
func TestServeStreamRefusals(t *testing.T) {
	ts := startServer(t, func(c *serveConfig, _ *server) { c.maxStreams = 2 })
	post := func(body string) (int, map[string]any) {
		status, _, ans := ts.postTo(t, "/v1/stream", []byte(body))
		return status, ans
	}
	if status, ans := post(`{"sequences": [{"id": "s1", "rows": [{"t": 1, "features": [1.5]}, {"t": 2, "features": [2.5]}]}]}`); status != 200 {
		t.Fatalf("status %d: %v", status, ans["error"])
	}
	for _, c := range []struct{ body, want string }{
		{`{"sequences": [{"id": "s1", "rows": [{"t": 0, "features": [1]}]}]}`, "sequences[0].rows[0].t: step 0 is before the stream's last step 2"},
		{`{"sequences": [{"id": "s1", "rows": [{"t": 7, "target": 1}]}]}`, "sequences[0].rows[0]: a label for step 7, which the stream does not have"},
		{`{"sequences": [{"id": "s1", "rows": [{"t": 2, "features": [9]}]}]}`, "sequences[0].rows[0].features: step 2 is in the stream with other features"},
		{`{"sequences": [{"id": "s1", "rows": [{"features": [9]}]}]}`, "sequences[0].rows[0].t: missing"},
	} {
		status, ans := post(c.body)
		if status != 400 || !strings.HasPrefix(fmt.Sprint(ans["error"]), c.want) {
			t.Errorf("%s: status %d, error %q; want 400 and %q", c.body, status, ans["error"], c.want)
		}
	}
	// A label, then two more streams: s1, the least recently used, goes.
	if status, ans := post(`{"sequences": [{"id": "s1", "rows": [{"t": 1, "target": 2}]}]}`); status != 200 || ans["dropped"] != 0.0 {
		t.Fatalf("label: status %d, dropped %v: %v", status, ans["dropped"], ans["error"])
	}
	post(`{"sequences": [{"id": "s2", "rows": [{"t": 1, "features": [1]}]}]}`)
	if status, ans := post(`{"sequences": [{"id": "s3", "rows": [{"t": 1, "features": [1]}]}]}`); status != 200 || ans["dropped"] != 1.0 {
		t.Fatalf("third stream: status %d, dropped %v, want 1", status, ans["dropped"])
	}
	if status, ans := post(`{"sequences": [{"id": "s1", "rows": [{"t": 2, "target": 1}]}]}`); status != 400 {
		t.Errorf("a label for a dropped stream: status %d, want 400: %v", status, ans)
	}
}

// TestServeStreamConcurrent: streams fed from several clients at once
// each keep their own rows (run under -race by CI), and a stream's
// answers equal a batch predict of its rows.
func TestServeStreamConcurrent(t *testing.T) {
	ts := startServer(t, func(c *serveConfig, _ *server) { c.concurrency = 8 })
	const clients, rows = 4, 5
	var wg sync.WaitGroup
	last := make([]map[string]any, clients)
	errs := make(chan string, clients*rows)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rows {
				body := fmt.Sprintf(`{"sequences": [{"id": "c%d", "rows": [{"t": %d, "features": [%d.5]}]}]}`, c, k, c+k)
				resp, err := http.Post(ts.url+"/v1/stream", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err.Error()
					return
				}
				var ans map[string]any
				err = json.NewDecoder(resp.Body).Decode(&ans)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					errs <- fmt.Sprintf("client %d row %d: status %d %v %v", c, k, resp.StatusCode, err, ans["error"])
					return
				}
				last[c] = ans
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		return
	}
	for c, ans := range last {
		info := ans["streams"].([]any)[0].(map[string]any)
		if info["id"] != fmt.Sprintf("c%d", c) || info["rows"] != float64(rows) {
			t.Errorf("client %d: the server holds %v", c, info)
		}
		// The last answer equals /v1/predict of the stream's rows, at its
		// last row.
		var rs []string
		for k := range rows {
			rs = append(rs, fmt.Sprintf(`{"t": %d, "features": [%d.5]}`, k, c+k))
		}
		_, _, batch := ts.post(t, []byte(fmt.Sprintf(`{"sequences": [{"id": "c%d", "rows": [%s]}]}`, c, strings.Join(rs, ", "))))
		steps := batch["sequences"].([]any)[0].(map[string]any)["steps"].([]any)
		want := steps[len(steps)-1]
		got := ans["sequences"].([]any)[0].(map[string]any)["steps"].([]any)[0]
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("client %d: last answer %v, predict of the stream %v", c, got, want)
		}
	}
}
