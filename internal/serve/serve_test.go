package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/serve/servetest"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// The small synthetic example (examples/synthetic) and its calibration
// split.
const (
	exModel = "../../examples/synthetic/model_small.onnx"
	exTrain = "../../examples/synthetic/train_small.csv"
	exTest  = "../../examples/synthetic/test_small.csv"
	exCal   = "../../examples/synthetic/cal_small.csv"
)

// fitted is an audit fitted to a model and its artifact's header.
type fitted struct {
	f *audit.Fitted
	h artifact.Header
}

// fitSmall fits the small synthetic example with its calibration split
// once per test binary, as audit fit --ridge 10 does (the command's
// tests check that the server's answers equal audit predict's), and
// returns the fit and the header of its artifact.
var fitSmall = sync.OnceValues(func() (fitted, error) {
	g, _, err := onnx.LoadOutput(exModel, "")
	if err != nil {
		return fitted{}, err
	}
	layout, why := onnx.DetectLayout(g)
	if layout == onnx.Unknown {
		return fitted{}, fmt.Errorf("layout: %s", why)
	}
	train, err := blocks.ReadFile(exTrain, &blocks.Options{IDCol: "id", TimeCol: "t", Targets: []string{"y"}})
	if err != nil {
		return fitted{}, err
	}
	cal, err := blocks.ReadFile(exCal, &blocks.Options{IDCol: "id", TimeCol: "t", Targets: train.Targets, Features: train.Features})
	if err != nil {
		return fitted{}, err
	}
	model, err := os.ReadFile(exModel)
	if err != nil {
		return fitted{}, err
	}
	opt := audit.Options{Alpha: 0.1, Ridge: 10, Layout: layout, Calibration: cal, Seed: 1, ModelPath: exModel, DampingSensitivity: true}
	f, err := audit.Fit(context.Background(), g, train, &opt)
	if err != nil {
		return fitted{}, err
	}
	var buf bytes.Buffer
	if err := f.Save(&buf, sha256.Sum256(model)); err != nil {
		return fitted{}, err
	}
	h, err := artifact.ReadHeader(bufio.NewReader(&buf))
	return fitted{f, h}, err
})

// testServer is a server started on a free loopback port.
type testServer struct {
	s    *Server
	url  string
	log  *lockedBuffer
	stop context.CancelFunc
	done chan error
}

// startServer starts a server for the small example's fit; edit may
// change the settings and the server before it listens.
func startServer(t *testing.T, edit func(*Config, *Server)) *testServer {
	t.Helper()
	fit, err := fitSmall()
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, fit.f, fit.h, edit)
}

// startServerFor starts a server for the fit f with artifact header h.
func startServerFor(t *testing.T, f *audit.Fitted, h artifact.Header, edit func(*Config, *Server)) *testServer {
	t.Helper()
	cfg := Config{MaxBody: 8 << 20, Timeout: 30 * time.Second, Drain: 5 * time.Second, Concurrency: 2,
		MaxSequences: 1000, MaxRows: 100, MaxStreams: 100, ToolVersion: "rnnaudit test"}
	logb := &lockedBuffer{}
	s := New(f, h, cfg, logb)
	if edit != nil {
		edit(&s.cfg, s)
		s.setLimits()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ts := &testServer{s: s, url: "http://" + ln.Addr().String(), log: logb, stop: stop, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-ts.done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	return ts
}

// post sends body to /v1/predict and returns the status, the header and
// the decoded answer.
func (ts *testServer) post(t *testing.T, body []byte) (int, http.Header, map[string]any) {
	t.Helper()
	return ts.postTo(t, "/v1/predict", body)
}

// postTo sends body to the endpoint path.
func (ts *testServer) postTo(t *testing.T, path string, body []byte) (int, http.Header, map[string]any) {
	t.Helper()
	status, h, ans, err := servetest.Post(ts.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, h, ans
}

// requestFromCSV is the request that sends the sequences of a CSV file
// of the small example (columns id, t, x, y), with or without targets.
func requestFromCSV(t *testing.T, path string, targets bool) []byte {
	t.Helper()
	b, err := servetest.RequestFromCSV(path, targets)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServeShift: with a shift, a row's target is taken from the row
// shift steps later, as the CSV reader does, and rows in any order are
// sorted by t.
func TestServeShift(t *testing.T) {
	h := artifact.Header{IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}, Shift: 1}
	body := `{"sequences": [{"id": 7, "rows": [{"t": 3, "features": [0.3], "target": 30}, {"t": 1, "features": [0.1], "target": 10},
		{"t": 2, "features": [0.2], "target": 20}]}]}`
	rr := &requestReader{h: h, lim: requestLimits{maxSequences: 10, maxRows: 10}}
	d, err := rr.read([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &blocks.Sequence{ID: "7", Steps: []float64{1, 2, 3}, X: [][]float64{{0.1}, {0.2}, {0.3}}, Y: [][]float64{{20}, {30}, nil}, Head: [][]float64{{10}}}
	if len(d.Seqs) != 1 || !reflect.DeepEqual(d.Seqs[0], want) || !reflect.DeepEqual(d.Targets, []string{"y"}) {
		t.Errorf("got %+v, want %+v", d.Seqs[0], want)
	}
	d2, err := blocks.Read(strings.NewReader("id,t,x,y\n7,3,0.3,30\n7,1,0.1,10\n7,2,0.2,20\n"), "x.csv", &blocks.Options{Shift: 1})
	if err != nil {
		t.Fatal(err)
	}
	d2.Seqs[0].Lines = nil
	if !reflect.DeepEqual(d2.Seqs[0], want) {
		t.Errorf("the CSV reader gives %+v, the request %+v", d2.Seqs[0], want)
	}
	// The target column as a feature: given there only.
	h.Features = []string{"x", "y"}
	rr = &requestReader{h: h, lim: requestLimits{maxSequences: 10, maxRows: 10}}
	d, err = rr.read([]byte(`{"sequences": [{"id": "a", "rows": [{"features": [1, 10]}, {"features": [2, 20]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Seqs[0].Y; !reflect.DeepEqual(got, [][]float64{{20}, nil}) || !reflect.DeepEqual(d.Seqs[0].Steps, []float64{0, 1}) {
		t.Errorf("target from the feature: Y %v, steps %v", got, d.Seqs[0].Steps)
	}
	_, err = rr.read([]byte(`{"sequences": [{"id": "a", "rows": [{"features": [1, 10], "target": 3}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "sequences[0].rows[0].target: the target column y is feature 1") {
		t.Errorf("a target beside its feature: %v", err)
	}
}

// TestServeBadRequests: every bad request gets a 4xx JSON answer whose
// error names the field at fault, with the model hash.
func TestServeBadRequests(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) {
		c.MaxBody = 4096
		c.MaxSequences, c.MaxRows = 3, 4
	})
	row := `{"t": 1, "features": [0.5]}`
	seq := func(id string, rows ...string) string {
		return `{"id": ` + id + `, "rows": [` + strings.Join(rows, ", ") + `]}`
	}
	req := func(seqs ...string) string { return `{"sequences": [` + strings.Join(seqs, ", ") + `]}` }
	for _, tc := range []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"empty body", "", 400, "empty body"},
		{"not JSON", "id,t,x\n1,1,2\n", 400, "malformed JSON at line 1"},
		{"cut short", `{"sequences": [`, 400, "cut short"},
		{"two values", `{"sequences": []} {}`, 400, "more than one JSON value"},
		{"an array", `[1, 2]`, 400, "expected an object, got an array"},
		{"unknown field", `{"sequences": [], "alpha": 0.05}`, 400, "alpha: unknown field"},
		{"no sequences", `{}`, 400, "sequences: missing"},
		{"sequences empty", req(), 400, "sequences: empty"},
		{"too many sequences", req(seq(`"a"`, row), seq(`"b"`, row), seq(`"c"`, row), seq(`"d"`, row)), 400, "sequences: 4 sequences, more than the 3 one request may hold (--max-sequences)"},
		{"no id", req(`{"rows": [` + row + `]}`), 400, "sequences[0].id: missing"},
		{"empty id", req(seq(`"  "`, row)), 400, "sequences[0].id: empty"},
		{"id an object", req(seq(`{}`, row)), 400, "sequences[0].id: expected a string or a number, got an object"},
		{"duplicate id", req(seq(`"a"`, row), seq(`"a"`, row)), 400, `sequences[1].id: "a" is also the id of sequences[0]`},
		{"rows missing", req(`{"id": "a"}`), 400, "sequences[0].rows: missing"},
		{"rows empty", req(seq(`"a"`)), 400, "sequences[0].rows: empty"},
		{"too many rows", req(seq(`"a"`, row, row, row, row, row)), 400, "sequences[0].rows: 5 rows, more than the 4 a sequence may have (--max-rows)"},
		{"features short", req(seq(`"a"`, row), seq(`"b"`, row), seq(`"c"`, row, `{"t": 2, "features": []}`)), 400,
			"sequences[2].rows[1].features: expected 1 value (x), got 0"},
		{"features long", req(seq(`"a"`, `{"features": [1, 2]}`)), 400, "sequences[0].rows[0].features: expected 1 value (x), got 2"},
		{"feature a string", req(seq(`"a"`, `{"features": ["1"]}`)), 400, "sequences[0].rows[0].features[0]: expected a number, got a string"},
		{"feature huge", req(seq(`"a"`, `{"features": [1e200]}`)), 400, "sequences[0].rows[0].features[0]: 1e200 is beyond 1e+150"},
		{"features missing", req(seq(`"a"`, `{"t": 1}`)), 400, "sequences[0].rows[0].features: missing: expected 1 value (x)"},
		{"t a string", req(seq(`"a"`, `{"t": "1", "features": [1]}`)), 400, "sequences[0].rows[0].t: expected a number, got a string"},
		{"duplicate t", req(seq(`"a"`, row, row)), 400, "sequences[0].rows[1].t: step 1 is also the step of sequences[0].rows[0]"},
		{"row unknown field", req(seq(`"a"`, `{"features": [1], "y": 2}`)), 400, "sequences[0].rows[0].y: unknown field"},
		{"target missing", req(seq(`"a"`, `{"t": 1, "features": [1], "target": 2}`, `{"t": 2, "features": [1]}`)), 400,
			"sequences[0].rows[1].target: missing here but given at sequences[0].rows[0]"},
		{"target a bool", req(seq(`"a"`, `{"features": [1], "target": true}`)), 400, "sequences[0].rows[0].target: expected a number, got a boolean"},
		{"body too large", req(seq(`"a"`, `{"features": [`+strings.Repeat("1", 5000)+`]}`)), 413, "larger than 4096 bytes (--max-body)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, head, ans := ts.post(t, []byte(tc.body))
			msg, _ := ans["error"].(string)
			if status != tc.status || !strings.Contains(msg, tc.want) {
				t.Errorf("status %d, error %q; want %d and %q", status, msg, tc.status, tc.want)
			}
			if ans["model_sha256"] != ts.s.head.ModelSHA256 || head.Get("X-Model-SHA256") != ts.s.head.ModelSHA256 {
				t.Errorf("the answer lacks the model hash: %v", ans)
			}
		})
	}
	// Several problems are all listed.
	_, _, ans := ts.post(t, []byte(req(seq(`"a"`, `{"features": []}`, `{"features": ["x"]}`), seq(`""`, row))))
	if probs, _ := ans["problems"].([]any); len(probs) != 3 {
		t.Errorf("problems %v, want 3", ans["problems"])
	}
	// Method and path.
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/v1/predict", 405, "POST the sequences"},
		{"POST", "/healthz", 405, "use GET"},
		{"GET", "/v2/predict", 404, "no endpoint /v2/predict"},
	} {
		r, _ := http.NewRequest(tc.method, ts.url+tc.path, nil)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: status %d, %s", tc.method, tc.path, resp.StatusCode, b)
		}
	}
}

// TestServeHealth: /healthz names the model hash, the artifact format
// and the columns a request needs.
func TestServeHealth(t *testing.T) {
	ts := startServer(t, nil)
	resp, err := http.Get(ts.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthAnswer
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || h.Status != "ok" || h.ModelSHA256 != ts.s.head.ModelSHA256 || len(h.ModelSHA256) != 64 ||
		h.FormatVersion != artifact.Version || !reflect.DeepEqual(h.Artifact.Features, []string{"x"}) || h.ToolVersion == "" {
		t.Errorf("status %d, %+v", resp.StatusCode, h)
	}
}

// TestServeTimeout: the request's deadline reaches Predict, whose
// context error becomes a 504.
func TestServeTimeout(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) { c.Timeout = time.Nanosecond })
	status, _, ans := ts.post(t, requestFromCSV(t, exTest, false))
	if status != 504 || !strings.Contains(ans["error"].(string), "(--timeout)") {
		t.Errorf("status %d, %v", status, ans)
	}
}

// TestServeConcurrencyLimit: with every slot taken, a request gets 503
// and a Retry-After header at once; when a slot frees it is answered.
func TestServeConcurrencyLimit(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) { c.Concurrency = 1 })
	ts.s.sem <- struct{}{} // the one slot, as a request in flight holds it
	body := []byte(`{"sequences": [{"id": "a", "rows": [{"features": [0.5]}]}]}`)
	status, head, ans := ts.post(t, body)
	if status != 503 || head.Get("Retry-After") != "1" || !strings.Contains(ans["error"].(string), "--concurrency") {
		t.Errorf("status %d, Retry-After %q, %v", status, head.Get("Retry-After"), ans)
	}
	<-ts.s.sem
	if status, _, ans := ts.post(t, body); status != 200 {
		t.Errorf("after the slot freed: status %d, %v", status, ans)
	}
}

// TestServeShutdown: on shutdown the server stops accepting, lets the
// request in flight finish and answer, and returns; a request that
// outlasts the drain bound has its context cancelled.
func TestServeShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	ts := startServer(t, func(_ *Config, s *Server) {
		predict := s.predict
		s.predict = func(ctx context.Context, d *blocks.Dataset) (*audit.Result, error) {
			close(entered)
			<-release
			return predict(ctx, d)
		}
	})
	type answer struct {
		status int
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Post(ts.url+"/v1/predict", "application/json", strings.NewReader(`{"sequences": [{"id": "a", "rows": [{"features": [0.5]}]}]}`))
		if err != nil {
			got <- answer{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- answer{status: resp.StatusCode}
	}()
	<-entered
	ts.stop()
	// New connections are refused once the listener closes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.url, "http://"), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-ts.done:
		t.Fatalf("the server returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	if a := <-got; a.err != nil || a.status != 200 {
		t.Errorf("the request in flight: status %d, %v", a.status, a.err)
	}
	select {
	case err := <-ts.done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop after draining")
	}
	ts.done <- nil // for the cleanup

	// A request that outlasts the drain bound is cancelled.
	cancelled := make(chan struct{})
	entered2 := make(chan struct{})
	ts2 := startServer(t, func(c *Config, s *Server) {
		c.Drain = 50 * time.Millisecond
		s.predict = func(ctx context.Context, d *blocks.Dataset) (*audit.Result, error) {
			close(entered2)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}
	})
	go http.Post(ts2.url+"/v1/predict", "application/json", strings.NewReader(`{"sequences": [{"id": "a", "rows": [{"features": [0.5]}]}]}`))
	<-entered2
	start := time.Now()
	ts2.stop()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight was not cancelled after the drain bound")
	}
	if err := <-ts2.done; err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("run: %v after %s", err, time.Since(start))
	}
	ts2.done <- nil
	if !strings.Contains(ts2.log.String(), "were cancelled") {
		t.Errorf("log:\n%s", ts2.log.String())
	}
}

// TestServeConcurrentRequests: requests answered at the same time (one
// fit shared by every handler) get the answer a request alone gets; run
// with -race it checks that Predict shares the fit safely.
func TestServeConcurrentRequests(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) { c.Concurrency = 4 })
	body := requestFromCSV(t, exTest, true)
	_, _, alone := ts.post(t, body)
	var wg sync.WaitGroup
	answers := make([]map[string]any, 4)
	for i := range answers {
		wg.Go(func() {
			resp, err := http.Post(ts.url+"/v1/predict", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			json.NewDecoder(resp.Body).Decode(&answers[i])
		})
	}
	wg.Wait()
	for i, a := range answers {
		if !reflect.DeepEqual(a, alone) {
			t.Errorf("concurrent answer %d differs from the answer alone", i)
		}
	}
}

// TestServeUnprocessable: sequences the fit refuses (here a refusal from
// Predict) get a 422 naming the sequences field with Predict's message,
// and a defect of rnnaudit a 500 that hides its details and logs them.
func TestServeUnprocessable(t *testing.T) {
	refusal := errors.New("audit: sequence \"a\" has 5000 steps, more than the model's passes can hold")
	var mu sync.Mutex
	var fail error
	setFail := func(err error) { mu.Lock(); fail = err; mu.Unlock() }
	ts := startServer(t, func(_ *Config, s *Server) {
		s.predict = func(context.Context, *blocks.Dataset) (*audit.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			return nil, fail
		}
	})
	body := []byte(`{"sequences": [{"id": "a", "rows": [{"features": [0.5]}]}]}`)
	setFail(refusal)
	status, _, ans := ts.post(t, body)
	if status != 422 || ans["error"] != "sequences: "+refusal.Error() {
		t.Errorf("refusal: status %d, %v", status, ans)
	}
	setFail(&audit.InternalError{Value: "index out of range"})
	status, _, ans = ts.post(t, body)
	if status != 500 || strings.Contains(fmt.Sprint(ans), "index out of range") || !strings.Contains(ts.log.String(), "index out of range") {
		t.Errorf("internal error: status %d, %v; log %s", status, ans, ts.log.String())
	}
}

// lockedBuffer is a buffer safe for concurrent writes: a server's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
