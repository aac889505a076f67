package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit/artifact"
)

// TestStrictDecode: what encoding/json lets through silently is a
// problem naming the field: a key given twice (the last would win), text
// that is not UTF-8 (raw bytes, or an escaped lone surrogate, which
// encoding/json turns into U+FFFD so that two ids become one), nesting
// too deep. Valid text (a surrogate pair, an escaped backslash before a
// u) is read as before.
func TestStrictDecode(t *testing.T) {
	h := artifact.Header{IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}}
	read := func(body string) error {
		rr := &requestReader{h: h, lim: requestLimits{maxSequences: 10, maxRows: 10}}
		_, err := rr.read([]byte(body))
		return err
	}
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	for _, tc := range []struct{ name, body, want string }{
		{"duplicate top key", `{"sequences": [], "sequences": [{"id": "a", "rows": [{"features": [1]}]}]}`, "sequences: given twice in one object"},
		{"duplicate id key", `{"sequences": [{"id": "a", "id": "b", "rows": [{"features": [1]}]}]}`, "sequences[0].id: given twice in one object"},
		{"duplicate row key", `{"sequences": [{"id": "a", "rows": [{"features": [1]}, {"t": 1, "features": [1], "t": 2}]}]}`, "sequences[0].rows[1].t: given twice"},
		{"invalid UTF-8 id", "{\"sequences\": [{\"id\": \"a\xff\", \"rows\": [{\"features\": [1]}]}]}", "sequences[0].id: this string is not UTF-8 (byte 0xff at offset 24 of the body)"},
		{"invalid UTF-8 key", "{\"sequences\": [{\"i\xc3d\": \"a\", \"rows\": [{\"features\": [1]}]}]}", "this key is not UTF-8"},
		{"lone high surrogate", `{"sequences": [{"id": "a\ud800", "rows": [{"features": [1]}]}]}`, "sequences[0].id: this string holds an escaped lone surrogate"},
		{"lone low surrogate", `{"sequences": [{"id": "\udc00b", "rows": [{"features": [1]}]}]}`, "sequences[0].id: this string holds an escaped lone surrogate"},
		{"reversed pair", `{"sequences": [{"id": "\ude00\ud83d", "rows": [{"features": [1]}]}]}`, "lone surrogate"},
		{"too deep", `{"sequences": [{"id": "a", "rows": [{"features": [` + deep + `]}]}]}`, "nested deeper than 32 levels"},
		{"cut short", `{"sequences": [{"id": "a", "rows": [`, "cut short"},
		{"trailing", `{"sequences": []} {}`, "more than one JSON value"},
		{"syntax", `{"sequences" [}`, "malformed JSON at line 1"},
	} {
		err := read(tc.body)
		var re *requestError
		if !errors.As(err, &re) || re.status != 400 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a 400 with %q", tc.name, err, tc.want)
		}
	}
	for _, body := range []string{
		`{"sequences": [{"id": "\ud83d\ude00", "rows": [{"features": [1]}]}]}`, // a pair: one character
		`{"sequences": [{"id": "a\\ud800", "rows": [{"features": [1]}]}]}`,     // a backslash, then text
		"{\"sequences\": [{\"id\": \"caf\u00e9\", \"rows\": [{\"features\": [1]}]}]}",
	} {
		if err := read(body); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	// Two ids that encoding/json would both read as "a\uFFFD" stay apart:
	// each is refused, rather than the second reported as a duplicate.
	err := read("{\"sequences\": [{\"id\": \"a\xff\", \"rows\": [{\"features\": [1]}]}, {\"id\": \"a\xfe\", \"rows\": [{\"features\": [1]}]}]}")
	if err == nil || strings.Contains(err.Error(), "is also the id") {
		t.Errorf("ids with invalid bytes: %v", err)
	}
}

// TestElidedMessages: a request's long key, id or number is repeated in
// an error answer only as a short prefix, and no message is longer than
// maxMessage bytes.
func TestElidedMessages(t *testing.T) {
	h := artifact.Header{IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}}
	long := strings.Repeat("k", 100_000)
	for _, body := range []string{
		`{"sequences": [], "` + long + `": 1}`,
		`{"sequences": [{"id": "` + long + `", "rows": [{"features": [1]}]}, {"id": "` + long + `", "rows": [{"features": [1]}]}]}`,
		`{"sequences": [{"id": "a", "rows": [{"features": [1` + strings.Repeat("0", 100_000) + `]}]}]}`,
	} {
		rr := &requestReader{h: h, lim: requestLimits{maxSequences: 10, maxRows: 10}}
		_, err := rr.read([]byte(body))
		var re *requestError
		if !errors.As(err, &re) {
			t.Fatalf("no request error: %v", err)
		}
		for _, p := range re.problems {
			if len(p.Message) > maxMessage || len(p.Field) > maxField || strings.Contains(p.Field+p.Message, strings.Repeat("k", maxEcho+1)) {
				t.Errorf("a problem of %d+%d bytes: %.200s", len(p.Field), len(p.Message), p.Field+": "+p.Message)
			}
		}
	}
}

// rawAnswer sends the raw request req on a new connection to ts and
// reads the answer, within 10 s; the connection's writes may fail once
// the server has answered (it stops reading).
func rawAnswer(t *testing.T, ts *testServer, req string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, b
}

// TestServeHostile: the HTTP probes of a hostile or clumsy client each end
// in a 4xx JSON answer with one short message naming the field or the
// limit, a body of at most a few kB whatever was sent, and log lines
// that hold no control character from the request.
func TestServeHostile(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) {
		c.MaxHeaderBytes, c.MaxURL, c.ReadHeaderTimeout = 16<<10, 4<<10, 300*time.Millisecond
	})
	post := func(body string) string {
		return fmt.Sprintf("POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	for _, tc := range []struct {
		name, req string
		status    int
		want      string
	}{
		{"duplicate keys", post(`{"sequences": [{"id": "a", "id": "b", "rows": [{"features": [1]}]}]}`), 400, "sequences[0].id: given twice"},
		{"invalid UTF-8 id", post("{\"sequences\": [{\"id\": \"\xc0\xaf\", \"rows\": [{\"features\": [1]}]}]}"), 400, "sequences[0].id: this string is not UTF-8"},
		{"unknown field", post(`{"sequences": [{"id": "a", "rows": [{"features": [1], "weight": 2}]}]}`), 400, "sequences[0].rows[0].weight: unknown field"},
		{"long path", "GET /" + strings.Repeat("a", 3000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no endpoint \"/aaaa"},
		{"short path", "GET /v2/predict HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no endpoint /v2/predict: the endpoints are"},
		{"URL over --max-url", "GET /healthz?" + strings.Repeat("q", 5000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "(--max-url)"},
		{"100 kB URL", "GET /" + strings.Repeat("a", 100_000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431, "(--max-header-bytes)"},
		{"1 MB of headers", "GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 1000) + "\r\n", 431, "larger than 16384 bytes (--max-header-bytes)"},
		{"malformed header", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, "malformed HTTP request (400 Bad Request)"},
		{"control byte in the request line", "GET /a\x1bb HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed HTTP request"},
		{"newline in the path", "GET /x%0a2026-01-01T00:00:00Z%20127.0.0.1:1%20GET%20/admin%20200 HTTP/1.1\r\nHost: x\r\n\r\n", 404, `no endpoint "/x\n2026`},
		{"escape in the path", "GET /%1b[31mred HTTP/1.1\r\nHost: x\r\n\r\n", 404, `no endpoint "/\x1b[31mred"`},
		{"invalid UTF-8 in the path", "GET /%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n", 404, `no endpoint "/\xff\xfe"`},
		{"raw invalid UTF-8 in the path", "GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", 404, `no endpoint "/\xff\xfe"`},
		{"control byte in a header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x1bb\r\n\r\n", 400, "malformed HTTP request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawAnswer(t, ts, tc.req)
			var ans errorAnswer
			if err := json.Unmarshal(body, &ans); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, not a JSON answer (%v): %.300s", resp.StatusCode, err, body)
			}
			if resp.StatusCode != tc.status || !strings.Contains(ans.Error, tc.want) || ans.ModelSHA256 != ts.s.head.ModelSHA256 {
				t.Errorf("status %d, error %q; want %d and %q", resp.StatusCode, ans.Error, tc.status, tc.want)
			}
			if len(body) > 2048 || len(ans.Problems) != 1 || strings.Contains(string(body), strings.Repeat("a", maxEcho+1)) {
				t.Errorf("a body of %d bytes with %d problems: %.300s", len(body), len(ans.Problems), body)
			}
		})
	}
	// The log: one line per probe (every probe but the three that net/http
	// refuses before routing reaches the handler; those are logged by the
	// connection), no control character, the forged line quoted within
	// the real one.
	time.Sleep(50 * time.Millisecond) // the log line follows the answer
	logText := ts.log.String()
	lines := strings.Split(strings.TrimSuffix(logText, "\n"), "\n")
	if len(lines) != 16 { // the listening line and 15 probes
		t.Errorf("%d log lines, want 16:\n%s", len(lines), logText)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "2026-01-01") || len(l) > 1000 || strings.ContainsFunc(l, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			t.Errorf("log line %.300q", l)
		}
	}
	if !strings.Contains(logText, `"/x\n2026-01-01T00:00:00Z 127.0.0.1:1 GET /admin 200" 404`) || !strings.Contains(logText, `"/\x1b[31mred" 404`) {
		t.Errorf("the paths with control characters are not quoted in the log:\n%s", logText)
	}
}

// TestServeSlowHeader: a client that sends its headers slower than
// --read-header-timeout has its connection closed, and a good request
// is answered meanwhile.
func TestServeSlowHeader(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *Server) { c.ReadHeaderTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a good request beside the slow one: %v", err)
	}
	var h healthAnswer
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.Limits["read_header_timeout_seconds"] != 0.2 || h.Limits["max_header_bytes"] != float64(DefaultMaxHeaderBytes) || h.Limits["max_url_bytes"] != float64(DefaultMaxURL) {
		t.Errorf("/healthz limits %v", h.Limits)
	}
	// The rest of the headers, a byte at a time, never complete in time:
	// the server closes the connection (a read ends), well within the
	// deadline of 10 s.
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(c)
		closed <- err
	}()
	for _, b := range []byte("X-Slow: 1\r\n") {
		if _, err := c.Write([]byte{b}); err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A close is a clean end of the stream or, when the server closes
	// with the client's bytes still unread (or the client writes after
	// the close), a reset; only the client's own deadline means the
	// server kept the connection open.
	var ne net.Error
	if err := <-closed; err != nil && (errors.As(err, &ne) && ne.Timeout() || !errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("the slow connection was not closed by the server: %v", err)
	}
}
