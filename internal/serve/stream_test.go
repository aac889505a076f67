package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestServeStreamRefusals: a stream's rows are added in time order, a
// label needs its row, a row is sent once, and the streams held are
// bounded (the least recently used dropped).
func TestServeStreamRefusals(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) { c.MaxStreams = 2 })
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
	ts := startServer(t, func(c *Config, _ *Server) { c.Concurrency = 8 })
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
