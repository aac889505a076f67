// Package serve answers prediction requests over HTTP from one fitted
// audit (*audit.Fitted): POST /v1/predict gives the sequences of a JSON
// request their intervals, as audit predict gives those of a CSV file;
// POST /v1/stream keeps series that arrive a few rows at a time with
// their labels; GET /healthz describes the artifact and the limits. A
// Server is an http.Handler; Serve runs it on a listener with the
// command's timeouts until its context ends, then drains. The audit
// command's serve (internal/cli) reads the artifact and the flags.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/reports"
)

// Config are the limits of a Server; the messages of its answers name
// the audit serve flag of each (--max-body and so on). Every count and
// duration but Drain must be positive.
type Config struct {
	// MaxBody is the largest request body, in bytes (413 beyond).
	MaxBody int64
	// MaxSequences is the number of sequences one request may hold.
	MaxSequences int
	// MaxRows is the number of rows a sequence, and a stream, may have.
	MaxRows int
	// MaxStreams is the number of streams POST /v1/stream holds, the
	// least recently used dropped first.
	MaxStreams int
	// Timeout is a request's time limit (504 beyond).
	Timeout time.Duration
	// Concurrency is the number of predictions at once; more get 503.
	Concurrency int
	// Drain is how long Serve's shutdown waits for the requests in
	// flight before it cancels them.
	Drain time.Duration
	// MaxHeaderBytes is the largest request line and headers, in bytes
	// (431 beyond); 0: DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxURL is the longest request target (path and query), in bytes
	// (414 beyond); 0: DefaultMaxURL.
	MaxURL int
	// ReadHeaderTimeout is how long a client has to send its request
	// line and headers before the connection is closed; 0:
	// DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// ToolVersion is the tool_version of GET /healthz.
	ToolVersion string
	// ErrorText is the message of a 422 answer for an error of Predict
	// (sequences the fit cannot predict); nil: the first line of its
	// Error.
	ErrorText func(error) string
}

// The defaults of the limits a Config leaves at zero: Go's own header
// limit (1 MiB) and no limit on the URL would let a client make the
// server hold a megabyte per connection.
const (
	DefaultMaxHeaderBytes    = 32 << 10
	DefaultMaxURL            = 8 << 10
	DefaultReadHeaderTimeout = 10 * time.Second
)

// A Server answers prediction requests from one fitted audit. It is an
// http.Handler, safe for concurrent use; Serve runs it.
type Server struct {
	head artifact.Header
	// predict is the fit's Predict (a test may wrap it).
	predict func(context.Context, *blocks.Dataset) (*audit.Result, error)
	cfg     Config
	sem     chan struct{}
	streams *streamStore
	log     *log.Logger
	now     func() time.Time
	mux     http.Handler
}

// New returns a Server for the fit f, whose artifact's header is h (its
// columns say what a request holds), with the limits of cfg, logging
// every request on one line to logw.
func New(f *audit.Fitted, h artifact.Header, cfg Config, logw io.Writer) *Server {
	s := &Server{head: h, predict: f.Predict, cfg: cfg, log: log.New(logw, "", 0), now: time.Now}
	s.setLimits()
	s.mux = s.handler()
	return s
}

// setLimits makes the prediction slots and the stream store of s.cfg,
// and sets the limits it leaves at zero to their defaults.
func (s *Server) setLimits() {
	if s.cfg.MaxHeaderBytes <= 0 {
		s.cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if s.cfg.MaxURL <= 0 {
		s.cfg.MaxURL = DefaultMaxURL
	}
	if s.cfg.ReadHeaderTimeout <= 0 {
		s.cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	s.sem = make(chan struct{}, s.cfg.Concurrency)
	s.streams = newStreamStore(s.cfg.MaxStreams, s.cfg.MaxRows)
}

// ServeHTTP answers one request: POST /v1/predict, POST /v1/stream or
// GET /healthz, every answer with the model's hash in the X-Model-SHA256
// header, and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// limits are the request reader's limits of s.cfg.
func (s *Server) limits() requestLimits {
	return requestLimits{maxSequences: s.cfg.MaxSequences, maxRows: s.cfg.MaxRows}
}

// errorText is the message of a 422 answer for err.
func (s *Server) errorText(err error) string {
	if s.cfg.ErrorText != nil {
		return s.cfg.ErrorText(err)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}

// isLoopback says whether a listener's address is on the loopback
// interface.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Serve serves on ln until ctx is done, then shuts down: it stops
// accepting, waits up to Config.Drain for the requests in flight,
// cancels those still running and returns nil. A listener beyond the
// loopback interface is served with a warning in the log: there is no
// authentication or TLS.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !isLoopback(ln.Addr()) {
		s.log.Printf("warning: serving on %s, beyond this machine: anyone who reaches it can query the model; there is no authentication or TLS", ln.Addr())
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           s,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ReadTimeout:       s.cfg.Timeout + 10*time.Second,
		WriteTimeout:      s.cfg.Timeout + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.log,
	}
	s.log.Printf("audit serve: listening on http://%s (model sha256 %s, artifact format %d): POST /v1/predict, POST /v1/stream, GET /healthz",
		ln.Addr(), s.head.ModelSHA256, s.head.Version)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(&jsonErrorListener{Listener: ln, s: s}) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Printf("audit serve: shutting down; waiting up to %s for the requests in flight", s.cfg.Drain)
	dctx, dcancel := context.WithTimeout(context.Background(), s.cfg.Drain)
	defer dcancel()
	if err := srv.Shutdown(dctx); err != nil {
		cancel() // the predictions in flight see their context end
		srv.Close()
		s.log.Printf("audit serve: requests still running after %s were cancelled", s.cfg.Drain)
	}
	<-errc
	s.log.Printf("audit serve: stopped")
	return nil
}

// handler routes the endpoints, each answer with the model hash and a
// log line.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/predict", s.servePredict)
	mux.HandleFunc("/v1/stream", s.serveStream)
	mux.HandleFunc("/healthz", s.serveHealth)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, fieldProblem{Message: fmt.Sprintf("no endpoint %s: the endpoints are POST /v1/predict, POST /v1/stream and GET /healthz", quoteUnsafe(r.URL.Path, maxEcho))})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		rec.Header().Set("X-Model-SHA256", s.head.ModelSHA256)
		if n := len(r.RequestURI); n > s.cfg.MaxURL {
			s.fail(rec, http.StatusRequestURITooLong, fieldProblem{Message: fmt.Sprintf("the URL is %d bytes, more than the %d the server takes (--max-url): the endpoints are POST /v1/predict, POST /v1/stream and GET /healthz", n, s.cfg.MaxURL)})
		} else {
			mux.ServeHTTP(rec, r)
		}
		note := ""
		if rec.note != "" {
			note = " " + rec.note
		}
		s.log.Printf("%s %s %s %s %d %dB %s%s", start.UTC().Format(time.RFC3339Nano), r.RemoteAddr, logSafe(r.Method), logSafe(r.URL.Path),
			rec.status, rec.bytes, s.now().Sub(start).Round(time.Microsecond), note)
	})
}

// maxLogged is the number of bytes of a request's path a log line
// repeats.
const maxLogged = 200

// logSafe is s as a log line writes what came from a request (quoted
// when it is not plain: see quoteUnsafe).
func logSafe(s string) string { return quoteUnsafe(s, maxLogged) }

// quoteUnsafe is s as a message or a log line repeats what came from a
// request: as it is when it is at most n bytes of printable ASCII
// without spaces, quotes or backslashes (every path of the endpoints),
// else cut to n bytes (clip) and quoted in Go syntax, so that control
// characters (a newline decoded from %0a, an escape) cannot forge a log
// line or a terminal's state.
func quoteUnsafe(s string, n int) string {
	if len(s) > 0 && len(s) <= n {
		plain := true
		for i := 0; i < len(s) && plain; i++ {
			plain = s[i] > ' ' && s[i] < 0x7f && s[i] != '"' && s[i] != '\\'
		}
		if plain {
			return s
		}
	}
	return strconv.QuoteToASCII(clip(s, n))
}

// recorder keeps what the log line says of an answer.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
	note   string // what the handler adds to the log line
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// noteLog adds text to the request's log line.
func noteLog(w http.ResponseWriter, format string, args ...any) {
	if r, ok := w.(*recorder); ok {
		r.note = fmt.Sprintf(format, args...)
	}
}

// writeJSON answers v with the status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error": "encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// errorAnswer is the body of every 4xx and 5xx answer.
type errorAnswer struct {
	Error       string         `json:"error"`
	Problems    []fieldProblem `json:"problems"`
	ModelSHA256 string         `json:"model_sha256"`
}

// fail answers an error: its first problem in "error", every problem in
// "problems".
func (s *Server) fail(w http.ResponseWriter, status int, problems ...fieldProblem) {
	for i := range problems {
		problems[i] = bounded(problems[i])
	}
	e := &requestError{status: status, problems: problems}
	noteLog(w, "error=%q", e.Error())
	s.writeJSON(w, status, errorAnswer{Error: e.Error(), Problems: problems, ModelSHA256: s.head.ModelSHA256})
}

// maxMessage is the longest message, and maxField the longest field
// path, of an error answer, in bytes: a message that would repeat a long
// value (a shape, a row of features) has the middle of it elided.
const (
	maxMessage = 400
	maxField   = 200
)

// bounded is p with its field and message cut to maxField and maxMessage
// bytes, the middle elided.
func bounded(p fieldProblem) fieldProblem {
	p.Field, p.Message = errs.Elide(p.Field, maxField), errs.Elide(p.Message, maxMessage)
	return p
}

// predictAnswer is the body of a 200 answer of POST /v1/predict.
type predictAnswer struct {
	ModelSHA256   string                 `json:"model_sha256"`
	FormatVersion int                    `json:"format_version"`
	Alpha         float64                `json:"alpha"`
	Kinds         []string               `json:"kinds"`
	Recommended   string                 `json:"recommended"`
	Sequences     []reports.JSONSequence `json:"sequences"`
}

func (s *Server) servePredict(w http.ResponseWriter, r *http.Request) {
	body, release, ok := s.admit(w, r)
	if !ok {
		return
	}
	defer release()
	rr := &requestReader{h: s.head, lim: s.limits()}
	d, err := rr.read(body)
	if err != nil {
		var re *requestError
		errors.As(err, &re)
		s.fail(w, re.status, re.problems...)
		return
	}
	res, ok := s.predictOrFail(w, r, d)
	if !ok {
		return
	}
	ans := s.answer(res)
	noteLog(w, "sequences=%d forecasts=%d", len(res.Sequences), forecasts(res))
	s.writeJSON(w, http.StatusOK, ans)
}

// admit takes a prediction slot for a POST request and reads its body;
// it answers the error itself (405, 503, 413, 400) when it cannot.
// release frees the slot.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.fail(w, http.StatusMethodNotAllowed, fieldProblem{Message: fmt.Sprintf("%s %s: POST the sequences as JSON", clip(r.Method, maxEcho), r.URL.Path)})
		return nil, nil, false
	}
	select {
	case s.sem <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "1")
		s.fail(w, http.StatusServiceUnavailable, fieldProblem{Message: fmt.Sprintf("all %d prediction slots are busy (--concurrency): retry after 1 s", cap(s.sem))})
		return nil, nil, false
	}
	release = func() { <-s.sem }
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		release()
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			s.fail(w, http.StatusRequestEntityTooLarge, fieldProblem{Message: fmt.Sprintf("the body is larger than %d bytes (--max-body): split the sequences over several requests", s.cfg.MaxBody)})
			return nil, nil, false
		}
		s.fail(w, http.StatusBadRequest, fieldProblem{Message: fmt.Sprintf("reading the body: %v", err)})
		return nil, nil, false
	}
	return body, release, true
}

// predictOrFail predicts d within the request's time limit; it answers
// the error itself (504, 503, 500, 422) when the prediction fails.
func (s *Server) predictOrFail(w http.ResponseWriter, r *http.Request, d *blocks.Dataset) (*audit.Result, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	res, err := s.predict(ctx, d)
	switch {
	case err == nil:
		return res, true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.fail(w, http.StatusGatewayTimeout, fieldProblem{Message: fmt.Sprintf("the prediction took longer than %s (--timeout): send fewer sequences per request", s.cfg.Timeout)})
	case ctx.Err() != nil:
		s.fail(w, http.StatusServiceUnavailable, fieldProblem{Message: "the server is shutting down: retry on another instance or later"})
	case isInternal(err):
		s.log.Printf("internal error: %s", strconv.Quote(errs.Elide(err.Error(), 4*maxMessage)))
		s.fail(w, http.StatusInternalServerError, fieldProblem{Message: "internal error (logged by the server)"})
	default:
		s.fail(w, http.StatusUnprocessableEntity, fieldProblem{Field: "sequences", Message: s.errorText(err)})
	}
	return nil, false
}

// answer is the body of a 200 answer for the result res.
func (s *Server) answer(res *audit.Result) predictAnswer {
	ans := predictAnswer{ModelSHA256: s.head.ModelSHA256, FormatVersion: s.head.Version, Alpha: res.Setting.Alpha,
		Kinds: []string{interval.KindJackknife, interval.KindInSample}, Recommended: reports.RecommendedKind(res),
		Sequences: reports.JSONSequences(res)}
	if res.Conformal != nil {
		ans.Kinds = append(ans.Kinds, interval.KindSplit, interval.KindBonferroni, interval.KindConformalJackknife)
		for _, f := range res.Conformal.Calibrated {
			if f.Kind == interval.KindNormalised { // a fit that kept the calibration values' scales
				ans.Kinds = append(ans.Kinds, f.Kind)
			}
		}
	}
	if res.Adaptive != nil {
		ans.Kinds = append(ans.Kinds, adaptive.Online()...)
	}
	return ans
}

// forecasts counts the forecasts of res.
func forecasts(res *audit.Result) int {
	n := 0
	for _, sq := range res.Sequences {
		n += len(sq.Steps)
	}
	return n
}

// isInternal says whether err is a defect of rnnaudit rather than of the
// request.
func isInternal(err error) bool {
	var ie *audit.InternalError
	return errors.As(err, &ie)
}

// healthAnswer is the body of GET /healthz: the artifact's header (its
// columns say what a request must hold) and the server's limits.
type healthAnswer struct {
	Status        string          `json:"status"`
	ModelSHA256   string          `json:"model_sha256"`
	FormatVersion int             `json:"format_version"`
	ToolVersion   string          `json:"tool_version"`
	Artifact      artifact.Header `json:"artifact"`
	Limits        map[string]any  `json:"limits"`
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.fail(w, http.StatusMethodNotAllowed, fieldProblem{Message: fmt.Sprintf("%s /healthz: use GET", clip(r.Method, maxEcho))})
		return
	}
	h := s.head
	s.writeJSON(w, http.StatusOK, healthAnswer{Status: "ok", ModelSHA256: h.ModelSHA256, FormatVersion: h.Version, ToolVersion: s.cfg.ToolVersion,
		Artifact: h, Limits: map[string]any{"max_body_bytes": s.cfg.MaxBody, "max_sequences": s.cfg.MaxSequences, "max_rows": s.cfg.MaxRows, "max_streams": s.cfg.MaxStreams,
			"timeout_seconds": s.cfg.Timeout.Seconds(), "concurrency": cap(s.sem), "max_header_bytes": s.cfg.MaxHeaderBytes, "max_url_bytes": s.cfg.MaxURL,
			"read_header_timeout_seconds": s.cfg.ReadHeaderTimeout.Seconds()}})
}
