package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/rnnaudit/rnnaudit/internal/serve"
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

	  Each step is a step of the JSON report (docs/reading-a-report.md, "JSON format"):
	  lower/upper the jackknife+ interval, naive_lower/naive_upper the
	  in-sample one and, when the fit had --calibration, split_lower/upper,
	  bonferroni_lower/upper and conformal_jackknife_lower/upper, and with
	  --adaptive aci_alpha, aci_lower/upper, agaci_lower/upper,
	  nexcp_lower/upper, rolling_lower/upper, aci_clipped_lower/upper,
	  qt_lower/upper and pid_lower/upper; an unbounded limit is null. recommended is the kind the audit recommends
	  (as the CSV's column: "" when a calibration set leaves the choice
	  open). With targets, covered says whether each is inside its interval.

	  errors: {"error": "sequences[2].rows[5].features: expected 3 values
	  (x1, x2, x3), got 2", "problems": [{"field": ..., "message": ...}],
	  "model_sha256": "..."} with status 400 (a field at fault; up to 10
	  problems), 404, 405, 413 (body over --max-body), 414 (URL over
	  --max-url), 431 (headers over --max-header-bytes), 422 (sequences
	  the fit cannot predict, such as longer than the model allows), 503 (every slot busy: retry after Retry-After seconds, or
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
	--max-header-bytes N the largest request line and headers together;
	                     431 beyond (default 32768, 32 KiB)
	--max-url N          the longest URL (path and query); 414 beyond
	                     (default 8192)
	--read-header-timeout D  how long a client has to send its request line
	                     and headers before the connection is closed
	                     (default 10s)

Every limit is in /healthz under "limits". A request body must be one JSON
object: a key given twice in one object, text that is not UTF-8 (raw bytes
or an escaped lone surrogate), an unknown field or nesting deeper than 32
levels is a 400 naming the field. An error answer repeats at most a short
prefix of what was sent (64 bytes of a key, id, number or path) and its
messages are at most a few hundred bytes; a log line quotes, escaped, a
path that holds anything but printable ASCII.
`

// serveCmd is "audit serve".
func serveCmd(args []string, stdout, stderr io.Writer) error {
	var cfg serve.Config
	var load, model, addr string
	fs := pflag.NewFlagSet("audit serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&load, "load", "", "")
	fs.StringVar(&model, "model", "", "")
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "")
	fs.Int64Var(&cfg.MaxBody, "max-body", 8<<20, "")
	fs.IntVar(&cfg.MaxSequences, "max-sequences", 1000, "")
	fs.IntVar(&cfg.MaxRows, "max-rows", 10000, "")
	fs.IntVar(&cfg.MaxStreams, "max-streams", 10000, "")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "")
	fs.IntVar(&cfg.Concurrency, "concurrency", runtime.GOMAXPROCS(0), "")
	fs.DurationVar(&cfg.Drain, "drain", 10*time.Second, "")
	fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", serve.DefaultMaxHeaderBytes, "")
	fs.IntVar(&cfg.MaxURL, "max-url", serve.DefaultMaxURL, "")
	fs.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", serve.DefaultReadHeaderTimeout, "")
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
		{"--max-body", cfg.MaxBody > 0}, {"--max-sequences", cfg.MaxSequences > 0}, {"--max-rows", cfg.MaxRows > 0}, {"--max-streams", cfg.MaxStreams > 0},
		{"--timeout", cfg.Timeout > 0}, {"--concurrency", cfg.Concurrency > 0}, {"--drain", cfg.Drain >= 0},
		{"--max-header-bytes", cfg.MaxHeaderBytes > 0}, {"--max-url", cfg.MaxURL > 0}, {"--read-header-timeout", cfg.ReadHeaderTimeout > 0},
	} {
		if !c.ok {
			return usagef("%s must be positive", c.name)
		}
	}
	f, h, _, err := loadFittedGraph(load, model)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	cfg.ToolVersion, cfg.ErrorText = versionString(), errorText
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.New(f, h, cfg, stderr).Serve(ctx, ln)
}
