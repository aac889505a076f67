package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/reports"
	"github.com/spf13/pflag"
)

// serveUsage is the text of audit serve --help.
const serveUsage = `audit serve answers POSTed sequences with their intervals from a fitted audit.

Usage:

	audit serve --load audit.rna [--addr 127.0.0.1:8080] [flags]

It loads the artifact of audit fit --save (and its model, from the path the
fit recorded or --model) once, then answers over HTTP, as audit predict
would on the same sequences (the same numbers):

	POST /v1/predict   (the body is JSON, whatever its Content-Type)
	  {"sequences": [
	    {"id": "p1", "rows": [
	      {"t": 1, "features": [0.5, 1.2], "target": 3.1},
	      {"t": 2, "features": [0.7, 1.1]}]}]}

	  id        a string or a number, unique in the request
	  rows      one per step, in any order; at most --max-rows
	  t         the step value (optional: the row's position 0, 1, ...)
	  features  the values of the fit's feature columns, in their order
	            (GET /healthz lists them under artifact.features)
	  target    optional: the value of the target column at that row; give
	            it in every row of the request or in none. With a shift the
	            target of row t is read from row t+shift, as from a CSV file;
	            a target column that is also a feature is given there only.

	  answer (200):
	  {"model_sha256": "...", "format_version": 1, "alpha": 0.1,
	   "kinds": ["jackknife_plus", "in_sample", ...],
	   "recommended": "jackknife_plus",
	   "sequences": [{"id": "p1", "steps": [{"t": 1, "horizon": 0,
	     "prediction": ..., "lower": ..., "upper": ..., "naive_lower": ...,
	     "naive_upper": ..., "m": ..., "split_lower": ..., ...}]}]}

	  Each step is a step of the JSON report (README "JSON format"):
	  lower/upper the jackknife+ interval, naive_lower/naive_upper the
	  in-sample one and, when the fit had --calibration, split_lower/upper,
	  bonferroni_lower/upper and conformal_jackknife_lower/upper, and with
	  --adaptive aci_alpha, aci_lower/upper, agaci_lower/upper,
	  nexcp_lower/upper and rolling_lower/upper; an unbounded limit is null. recommended is the kind the audit recommends
	  (as the CSV's column: "" when a calibration set leaves the choice
	  open). With targets, covered says whether each is inside its interval.

	  errors: {"error": "sequences[2].rows[5].features: expected 3 values
	  (x1, x2, x3), got 2", "problems": [{"field": ..., "message": ...}],
	  "model_sha256": "..."} with status 400 (a field at fault; up to 10
	  problems), 404, 405, 413 (body over --max-body), 422 (sequences the fit cannot predict, such as longer than the model
	  allows), 503 (every slot busy: retry after Retry-After seconds, or
	  shutting down), 504 (the prediction took longer than --timeout).

	POST /v1/stream    (series that arrive a few rows at a time)
	  {"sequences": [{"id": "p1", "rows": [
	      {"t": 3, "features": [0.9, 1.0]},
	      {"t": 2, "target": 2.7}]}]}

	  The server keeps each stream's rows (by id) and the labels received;
	  a request appends rows with later steps (t is required) and may give
	  the targets of rows sent before ({"t", "target"} without features),
	  as labels become known. The answer is that of /v1/predict for the
	  forecasts made at the appended rows, from a predict of the stream's
	  rows so far: the recurrent state runs on over the stream (and from
	  a training sequence it continues), and the adaptive kinds (a fit
	  with --adaptive) update with every label received, so their limits
	  are those of a batch audit predict of the whole labelled series.
	  Each request re-runs the stream's rows (its cost grows with the
	  stream; at most --max-rows); "streams" gives each stream's rows and
	  labelled rows held, "dropped" the streams dropped to keep at most
	  --max-streams (the least recently used; a dropped stream's id starts
	  afresh). A fit with --adaptive-pooled pools only the streams of one
	  request. 400 for a row before the stream's last, a label for a row
	  the stream lacks, a row sent again with other features, or a label
	  given twice with different values.

	GET /healthz
	  {"status": "ok", "model_sha256": ..., "format_version": 1,
	   "tool_version": ..., "artifact": {the artifact's header: "id_col",
	   "time_col", "features", "targets", "shift", "solver", "blocks", ...},
	   "limits": {...}}

Every answer carries the model's SHA-256 in the X-Model-SHA256 header.
Every request is logged to standard error on one line. SIGTERM or Ctrl-C
stops accepting connections, lets the requests in flight finish for at
most --drain, then cancels them and exits.

Flags:

	--load PATH          the fitted audit (audit fit --save); required
	--model PATH         the ONNX model (default: the path the fit recorded)
	--addr HOST:PORT     where to listen (default 127.0.0.1:8080, loopback
	                     only; another host is served with a warning: there
	                     is no authentication or TLS)
	--max-body BYTES     the largest request body (default 8388608, 8 MiB)
	--max-sequences N    sequences per request (default 1000)
	--max-rows N         rows per sequence, and per stream (default 10000)
	--max-streams N      streams POST /v1/stream holds (default 10000)
	--timeout D          per-request time limit, e.g. 30s (default 30s)
	--concurrency N      predictions at once; more get 503 (default: the
	                     number of CPUs)
	--drain D            how long shutdown waits for requests in flight
	                     (default 10s)
`

// serveConfig are the settings of audit serve.
type serveConfig struct {
	addr        string
	maxBody     int64
	timeout     time.Duration
	drain       time.Duration
	concurrency int
	lim         requestLimits
	maxStreams  int // streams POST /v1/stream holds
}

// server answers prediction requests from one fitted audit.
type server struct {
	head audit.ArtifactHeader
	// predict is the fit's Predict (a test may wrap it).
	predict func(context.Context, *blocks.Dataset) (*audit.Result, error)
	cfg     serveConfig
	sem     chan struct{}
	streams *streamStore
	log     *log.Logger
	now     func() time.Time
}

// newServer is a server for the fit f with artifact header h, logging to
// logw.
func newServer(f *audit.Fitted, h audit.ArtifactHeader, cfg serveConfig, logw io.Writer) *server {
	return &server{head: h, predict: f.Predict, cfg: cfg, sem: make(chan struct{}, cfg.concurrency),
		streams: newStreamStore(cfg.maxStreams, cfg.lim.maxRows), log: log.New(logw, "", 0), now: time.Now}
}

// serveCmd is "audit serve".
func serveCmd(args []string, stdout, stderr io.Writer) error {
	cfg := serveConfig{}
	var load, model string
	fs := pflag.NewFlagSet("audit serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&load, "load", "", "")
	fs.StringVar(&model, "model", "", "")
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "")
	fs.Int64Var(&cfg.maxBody, "max-body", 8<<20, "")
	fs.IntVar(&cfg.lim.maxSequences, "max-sequences", 1000, "")
	fs.IntVar(&cfg.lim.maxRows, "max-rows", 10000, "")
	fs.IntVar(&cfg.maxStreams, "max-streams", 10000, "")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "")
	fs.IntVar(&cfg.concurrency, "concurrency", runtime.GOMAXPROCS(0), "")
	fs.DurationVar(&cfg.drain, "drain", 10*time.Second, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, serveUsage)
			return errHelp
		}
		return usagef("%v (run 'audit serve --help')", err)
	}
	if fs.NArg() > 0 {
		return usagef("audit serve takes flags only, not %q (run 'audit serve --help')", fs.Arg(0))
	}
	if load == "" {
		return usagef("audit serve needs --load audit.rna, the file audit fit --save wrote (run 'audit serve --help')")
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"--max-body", cfg.maxBody > 0}, {"--max-sequences", cfg.lim.maxSequences > 0}, {"--max-rows", cfg.lim.maxRows > 0}, {"--max-streams", cfg.maxStreams > 0},
		{"--timeout", cfg.timeout > 0}, {"--concurrency", cfg.concurrency > 0}, {"--drain", cfg.drain >= 0},
	} {
		if !c.ok {
			return usagef("%s must be positive", c.name)
		}
	}
	f, h, _, err := loadFittedGraph(load, model)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", cfg.addr, err)
	}
	s := newServer(f, h, cfg, stderr)
	if !isLoopback(ln.Addr()) {
		s.log.Printf("warning: serving on %s, beyond this machine: anyone who reaches it can query the model; there is no authentication or TLS", ln.Addr())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.run(ctx, ln)
}

// isLoopback says whether a listener's address is on the loopback
// interface.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// run serves on ln until ctx is done, then shuts down: it stops
// accepting, waits up to cfg.drain for the requests in flight, cancels
// those still running and returns.
func (s *server) run(ctx context.Context, ln net.Listener) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           s.handler(),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.cfg.timeout + 10*time.Second,
		WriteTimeout:      s.cfg.timeout + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.log,
	}
	s.log.Printf("audit serve: listening on http://%s (model sha256 %s, artifact format %d): POST /v1/predict, POST /v1/stream, GET /healthz",
		ln.Addr(), s.head.ModelSHA256, s.head.Version)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Printf("audit serve: shutting down; waiting up to %s for the requests in flight", s.cfg.drain)
	dctx, dcancel := context.WithTimeout(context.Background(), s.cfg.drain)
	defer dcancel()
	if err := srv.Shutdown(dctx); err != nil {
		cancel() // the predictions in flight see their context end
		srv.Close()
		s.log.Printf("audit serve: requests still running after %s were cancelled", s.cfg.drain)
	}
	<-errc
	s.log.Printf("audit serve: stopped")
	return nil
}

// handler routes the endpoints, each answer with the model hash and a
// log line.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/predict", s.servePredict)
	mux.HandleFunc("/v1/stream", s.serveStream)
	mux.HandleFunc("/healthz", s.serveHealth)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, fieldProblem{Message: fmt.Sprintf("no endpoint %s: the endpoints are POST /v1/predict, POST /v1/stream and GET /healthz", r.URL.Path)})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		rec.Header().Set("X-Model-SHA256", s.head.ModelSHA256)
		mux.ServeHTTP(rec, r)
		note := ""
		if rec.note != "" {
			note = " " + rec.note
		}
		s.log.Printf("%s %s %s %s %d %dB %s%s", start.UTC().Format(time.RFC3339Nano), r.RemoteAddr, r.Method, r.URL.Path,
			rec.status, rec.bytes, s.now().Sub(start).Round(time.Microsecond), note)
	})
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
func (s *server) writeJSON(w http.ResponseWriter, status int, v any) {
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
func (s *server) fail(w http.ResponseWriter, status int, problems ...fieldProblem) {
	e := &requestError{status: status, problems: problems}
	noteLog(w, "error=%q", e.Error())
	s.writeJSON(w, status, errorAnswer{Error: e.Error(), Problems: problems, ModelSHA256: s.head.ModelSHA256})
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

func (s *server) servePredict(w http.ResponseWriter, r *http.Request) {
	body, release, ok := s.admit(w, r)
	if !ok {
		return
	}
	defer release()
	rr := &requestReader{h: s.head, lim: s.cfg.lim}
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
func (s *server) admit(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.fail(w, http.StatusMethodNotAllowed, fieldProblem{Message: fmt.Sprintf("%s %s: POST the sequences as JSON", r.Method, r.URL.Path)})
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	if err != nil {
		release()
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			s.fail(w, http.StatusRequestEntityTooLarge, fieldProblem{Message: fmt.Sprintf("the body is larger than %d bytes (--max-body): split the sequences over several requests", s.cfg.maxBody)})
			return nil, nil, false
		}
		s.fail(w, http.StatusBadRequest, fieldProblem{Message: fmt.Sprintf("reading the body: %v", err)})
		return nil, nil, false
	}
	return body, release, true
}

// predictOrFail predicts d within the request's time limit; it answers
// the error itself (504, 503, 500, 422) when the prediction fails.
func (s *server) predictOrFail(w http.ResponseWriter, r *http.Request, d *blocks.Dataset) (*audit.Result, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel()
	res, err := s.predict(ctx, d)
	switch {
	case err == nil:
		return res, true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.fail(w, http.StatusGatewayTimeout, fieldProblem{Message: fmt.Sprintf("the prediction took longer than %s (--timeout): send fewer sequences per request", s.cfg.timeout)})
	case ctx.Err() != nil:
		s.fail(w, http.StatusServiceUnavailable, fieldProblem{Message: "the server is shutting down: retry on another instance or later"})
	case isInternal(err):
		s.log.Printf("internal error: %v", err)
		s.fail(w, http.StatusInternalServerError, fieldProblem{Message: "internal error (logged by the server)"})
	default:
		s.fail(w, http.StatusUnprocessableEntity, fieldProblem{Field: "sequences", Message: errorText(err)})
	}
	return nil, false
}

// answer is the body of a 200 answer for the result res.
func (s *server) answer(res *audit.Result) predictAnswer {
	ans := predictAnswer{ModelSHA256: s.head.ModelSHA256, FormatVersion: s.head.Version, Alpha: res.Setting.Alpha,
		Kinds: []string{audit.KindJackknife, audit.KindInSample}, Recommended: reports.RecommendedKind(res),
		Sequences: reports.JSONSequences(res)}
	if res.Conformal != nil {
		ans.Kinds = append(ans.Kinds, audit.KindSplit, audit.KindBonferroni, audit.KindConformalJackknife)
	}
	if res.Adaptive != nil {
		ans.Kinds = append(ans.Kinds, audit.KindACI, audit.KindAgACI, audit.KindNexCP, audit.KindRolling)
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
	Status        string               `json:"status"`
	ModelSHA256   string               `json:"model_sha256"`
	FormatVersion int                  `json:"format_version"`
	ToolVersion   string               `json:"tool_version"`
	Artifact      audit.ArtifactHeader `json:"artifact"`
	Limits        map[string]any       `json:"limits"`
}

func (s *server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.fail(w, http.StatusMethodNotAllowed, fieldProblem{Message: fmt.Sprintf("%s /healthz: use GET", r.Method)})
		return
	}
	h := s.head
	s.writeJSON(w, http.StatusOK, healthAnswer{Status: "ok", ModelSHA256: h.ModelSHA256, FormatVersion: h.Version, ToolVersion: versionString(),
		Artifact: h, Limits: map[string]any{"max_body_bytes": s.cfg.maxBody, "max_sequences": s.cfg.lim.maxSequences, "max_rows": s.cfg.lim.maxRows, "max_streams": s.cfg.maxStreams,
			"timeout_seconds": s.cfg.timeout.Seconds(), "concurrency": cap(s.sem)}})
}
