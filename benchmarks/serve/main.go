// Command serve is the load test of audit serve: it sends POST
// /v1/predict requests built from the sequences of a CSV file to a server
// on this machine's loopback interface, from a few concurrent clients,
// and reports requests per second and latency quantiles. It is bounded in
// both the number of requests and time, and stops by itself at whichever
// comes first. run.sh fits the small synthetic example, starts the server
// and runs it.
//
//	go run ./benchmarks/serve --url http://127.0.0.1:8080 --data examples/synthetic/test_small.csv \
//	    --requests 2000 --duration 60s --clients 4 --sequences 1
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "serve load test:", err)
		os.Exit(1)
	}
}

// config are the load test's settings.
type config struct {
	url       string
	data      string
	requests  int
	duration  time.Duration
	clients   int
	sequences int
}

func run(args []string, stdout io.Writer) error {
	var c config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "the server (loopback only)")
	fs.StringVar(&c.data, "data", "examples/synthetic/test_small.csv", "CSV file (id, t, features..., y) whose sequences the requests send")
	fs.IntVar(&c.requests, "requests", 2000, "stop after this many requests")
	fs.DurationVar(&c.duration, "duration", time.Minute, "stop after this time")
	fs.IntVar(&c.clients, "clients", 4, "concurrent clients")
	fs.IntVar(&c.sequences, "sequences", 1, "sequences per request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.requests <= 0 || c.duration <= 0 || c.clients <= 0 || c.sequences <= 0 {
		return errors.New("--requests, --duration, --clients and --sequences must be positive")
	}
	u, err := url.Parse(c.url)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--url %s: the load test sends only to this machine's loopback interface (127.0.0.1, ::1, localhost)", c.url)
	}
	bodies, err := requestBodies(c.data, c.sequences)
	if err != nil {
		return err
	}
	res, err := load(c, bodies)
	if err != nil {
		return err
	}
	res.write(stdout, c)
	return nil
}

// requestBodies builds one request body per group of n sequences of the
// CSV file (targets dropped: new sequences), cycling through the file.
func requestBodies(path string, n int) ([][]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	head := recs[0]
	idc, tc, yc := slices.Index(head, "id"), slices.Index(head, "t"), slices.Index(head, "y")
	if idc < 0 || tc < 0 {
		return nil, fmt.Errorf("%s: needs columns id and t", path)
	}
	type row struct {
		T        json.Number   `json:"t"`
		Features []json.Number `json:"features"`
	}
	type seq struct {
		ID   string `json:"id"`
		Rows []row  `json:"rows"`
	}
	var seqs []*seq
	byID := map[string]*seq{}
	for _, r := range recs[1:] {
		s := byID[r[idc]]
		if s == nil {
			s = &seq{ID: r[idc]}
			byID[r[idc]] = s
			seqs = append(seqs, s)
		}
		w := row{T: json.Number(r[tc])}
		for i, v := range r {
			if i != idc && i != tc && i != yc {
				w.Features = append(w.Features, json.Number(v))
			}
		}
		s.Rows = append(s.Rows, w)
	}
	var bodies [][]byte
	for i := 0; i < len(seqs); i += n {
		group := make([]*seq, 0, n)
		for k := range n {
			group = append(group, seqs[(i+k)%len(seqs)])
		}
		b, err := json.Marshal(map[string]any{"sequences": group})
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	return bodies, nil
}

// result is what the load test measured.
type result struct {
	latencies []time.Duration // of the 200 answers
	status    map[int]int
	failed    int // requests without an answer (connection errors)
	elapsed   time.Duration
	bytes     int
}

// load sends the requests from c.clients goroutines until c.requests
// are sent or c.duration has passed.
func load(c config, bodies [][]byte) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.duration)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.clients}, Timeout: c.duration}
	// A first request checks the server answers before the clock starts.
	resp, err := client.Post(c.url+"/v1/predict", "application/json", bytes.NewReader(bodies[0]))
	if err != nil {
		return nil, fmt.Errorf("the server does not answer: %w", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the first request got status %d: %.300s", resp.StatusCode, b)
	}
	var (
		mu   sync.Mutex
		next int
		res  = &result{status: map[int]int{}}
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= c.requests || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	start := time.Now()
	for range c.clients {
		wg.Go(func() {
			for {
				i, ok := take()
				if !ok {
					return
				}
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/v1/predict", bytes.NewReader(bodies[i%len(bodies)]))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					if ctx.Err() == nil {
						res.failed++
					}
					mu.Unlock()
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				mu.Lock()
				res.status[resp.StatusCode]++
				res.bytes += int(n)
				if resp.StatusCode == http.StatusOK {
					res.latencies = append(res.latencies, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res, nil
}

// quantile is the q-quantile of sorted durations (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func (r *result) write(w io.Writer, c config) {
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	ok := len(r.latencies)
	fmt.Fprintf(w, "clients %d, %d sequence(s) per request, %s\n", c.clients, c.sequences, c.data)
	fmt.Fprintf(w, "requests answered 200: %d in %.2f s (%.1f requests/s, %.1f sequences/s)\n",
		ok, r.elapsed.Seconds(), float64(ok)/r.elapsed.Seconds(), float64(ok*c.sequences)/r.elapsed.Seconds())
	fmt.Fprintf(w, "latency p50 %s, p90 %s, p99 %s, max %s\n",
		quantile(r.latencies, 0.5).Round(10*time.Microsecond), quantile(r.latencies, 0.9).Round(10*time.Microsecond),
		quantile(r.latencies, 0.99).Round(10*time.Microsecond), quantile(r.latencies, 1).Round(10*time.Microsecond))
	codes := make([]int, 0, len(r.status))
	for s := range r.status {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	for _, s := range codes {
		if s != http.StatusOK {
			fmt.Fprintf(w, "status %d: %d requests\n", s, r.status[s])
		}
	}
	if r.failed > 0 {
		fmt.Fprintf(w, "without an answer: %d requests\n", r.failed)
	}
}
