package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/internal/serve"
	"github.com/rnnaudit/rnnaudit/internal/serve/servetest"
)

// The serve command's tests: the server (internal/serve) started as the
// command starts it, for a fit of audit fit, answers as audit predict
// does. The server's own tests are in internal/serve.

// fitSmall fits the small synthetic example with its calibration split
// once per test binary and returns the artifact's path.
var fitSmall = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "serve-test-")
	if err != nil {
		return "", err
	}
	art := filepath.Join(dir, "a.rna")
	if code, _, errs := runCmd("fit", "--save", art, "--model", exModel, "--data", exTrain, "--calibration", exCal,
		"--ridge", "10", "--quiet"); code != 0 {
		return "", fmt.Errorf("fit: exit %d: %s", code, errs)
	}
	return art, nil
})

// testServer is a server started on a free loopback port.
type testServer struct {
	url  string
	log  *lockedBuffer
	stop context.CancelFunc
	done chan error
}

// startServer starts a server for the small example's fit.
func startServer(t *testing.T) *testServer {
	t.Helper()
	art, err := fitSmall()
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, art, exModel)
}

// startServerFor starts a server for the artifact art of model, read
// as audit serve reads them.
func startServerFor(t *testing.T, art, model string) *testServer {
	t.Helper()
	f, h, _, err := loadFittedGraph(art, model)
	if err != nil {
		t.Fatal(err)
	}
	cfg := serve.Config{MaxBody: 8 << 20, Timeout: 30 * time.Second, Drain: 5 * time.Second, Concurrency: 2,
		MaxSequences: 1000, MaxRows: 100, MaxStreams: 100, ToolVersion: versionString(), ErrorText: errorText}
	logb := &lockedBuffer{}
	s := serve.New(f, h, cfg, logb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ts := &testServer{url: "http://" + ln.Addr().String(), log: logb, stop: stop, done: make(chan error, 1)}
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

// decodeSequences decodes the "sequences" of a JSON document.
func decodeSequences(t *testing.T, b []byte) []any {
	t.Helper()
	var doc struct{ Sequences []any }
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Sequences
}

// TestServePredictEqualsPredict: the server's answers for the test file's
// sequences, sent as JSON, equal the sequences of audit predict's JSON
// report on the same file (every limit of every kind, exactly), with and
// without targets, and carry the model's hash in the body and a header.
func TestServePredictEqualsPredict(t *testing.T) {
	ts := startServer(t)
	art, _ := fitSmall()
	dir := t.TempDir()
	model, err := os.ReadFile(exModel)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	hash := hex.EncodeToString(sum[:])
	// The unlabelled file: the test file without its y column.
	unlabelled := filepath.Join(dir, "new.csv")
	b, err := os.ReadFile(exTest)
	if err != nil {
		t.Fatal(err)
	}
	var ub strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(l, ",")
		ub.WriteString(strings.Join(f[:3], ",") + "\n")
	}
	if err := os.WriteFile(unlabelled, []byte(ub.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		data    string
		targets bool
	}{{"labelled", exTest, true}, {"unlabelled", unlabelled, false}} {
		t.Run(tc.name, func(t *testing.T) {
			pjs, pcsv := filepath.Join(dir, tc.name+".json"), filepath.Join(dir, tc.name+".csv")
			if code, _, errs := runCmd("predict", "--load", art, "--data", tc.data, "--out", pjs, "--out", pcsv, "--quiet"); code != 0 {
				t.Fatalf("predict: exit %d: %s", code, errs)
			}
			want, err := os.ReadFile(pjs)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Post(ts.url+"/v1/predict", "application/json", bytes.NewReader(requestFromCSV(t, exTest, tc.targets)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d, %v: %.300s", resp.StatusCode, err, got)
			}
			if h := resp.Header.Get("X-Model-SHA256"); h != hash {
				t.Errorf("X-Model-SHA256 %q, want %q", h, hash)
			}
			gs, ws := decodeSequences(t, got), decodeSequences(t, want)
			if len(gs) != 200 || !reflect.DeepEqual(gs, ws) {
				t.Errorf("the server's %d sequences differ from audit predict's %d", len(gs), len(ws))
				for i := range min(len(gs), len(ws)) {
					if !reflect.DeepEqual(gs[i], ws[i]) {
						t.Fatalf("first difference, sequence %d:\nserve   %v\npredict %v", i, gs[i], ws[i])
					}
				}
			}
			var ans struct {
				ModelSHA256   string   `json:"model_sha256"`
				FormatVersion int      `json:"format_version"`
				Alpha         float64  `json:"alpha"`
				Kinds         []string `json:"kinds"`
				Recommended   string   `json:"recommended"`
			}
			if err := json.Unmarshal(got, &ans); err != nil {
				t.Fatal(err)
			}
			recs := readRows(t, pcsv)
			if ans.ModelSHA256 != hash || ans.FormatVersion != artifact.Version || ans.Alpha != 0.1 || len(ans.Kinds) != 6 || ans.Kinds[5] != "normalised_split_conformal" || ans.Recommended != recs[1][17] {
				t.Errorf("answer head: hash %s, format %d, alpha %v, kinds %v, recommended %q (the CSV's %q)",
					ans.ModelSHA256, ans.FormatVersion, ans.Alpha, ans.Kinds, ans.Recommended, recs[1][17])
			}
		})
	}
	if !strings.Contains(ts.log.String(), "POST /v1/predict 200 ") {
		t.Errorf("no log line for the requests:\n%s", ts.log.String())
	}
}

// TestServeCommand: the command's usage, its flag errors and a start on a
// port that is taken.
func TestServeCommand(t *testing.T) {
	code, out, _ := runCmd("serve", "--help")
	if code != 0 || !strings.Contains(out, "POST /v1/predict") || !strings.Contains(out, "sequences[2].rows[5].features") {
		t.Errorf("serve --help: exit %d, %.200s", code, out)
	}
	art, err := fitSmall()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "needs --load"},
		{[]string{"--load", art, "--timeout", "0s"}, 2, "--timeout must be positive"},
		{[]string{"--load", art, "--concurrency", "0"}, 2, "--concurrency must be positive"},
		{[]string{"--load", art, "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"--load", art, "extra"}, 2, `not "extra"`},
		{[]string{"--load", filepath.Join(t.TempDir(), "none.rna")}, 1, "--load"},
		{[]string{"--load", art, "--model", exModel, "--addr", ln.Addr().String()}, 1, "--addr " + ln.Addr().String()},
	} {
		code, _, errs := runCmd(append([]string{"serve"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("serve %s: exit %d, %s; want %d and %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.want)
		}
	}
}
