package beamexec

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"

	df "google.golang.org/api/dataflow/v1b3"
)

// fakeDataflow is the part of the Dataflow jobs API that watchDataflow
// uses (get a job, update its requested state), on loopback: one job,
// running until its state is set, or cancelled on request.
type fakeDataflow struct {
	mu        sync.Mutex
	state     string
	requested []string // the requested states, in order
	refuse    bool     // answer updates with 403
	gets      int
}

const fakeJobPath = "/v1b3/projects/proj/locations/europe-west1/jobs/2026-11-24_job"

func (f *fakeDataflow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == fakeJobPath+"/metrics" && r.Method == http.MethodGet {
		// Dataflow's user counters: the attempted (tentative) and the
		// committed values of the chunks counter, and another counter.
		m := &df.JobMetrics{Metrics: []*df.MetricUpdate{
			{Name: &df.MetricStructuredName{Name: "chunks", Origin: "user", Context: map[string]string{"namespace": "rnnaudit", "step": "s2", "tentative": "true"}}, Scalar: 7},
			{Name: &df.MetricStructuredName{Name: "chunks", Origin: "user", Context: map[string]string{"namespace": "rnnaudit", "step": "s2"}}, Scalar: 5},
			{Name: &df.MetricStructuredName{Name: "elements", Origin: "user", Context: map[string]string{"namespace": "other", "tentative": "true"}}, Scalar: 100},
		}}
		json.NewEncoder(w).Encode(m)
		return
	}
	if r.URL.Path != fakeJobPath {
		http.Error(w, "no such job: "+r.URL.Path, http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		f.gets++
	case http.MethodPut:
		if f.refuse {
			http.Error(w, `{"error": {"code": 403, "message": "permission denied"}}`, http.StatusForbidden)
			return
		}
		var j df.Job
		if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.requested = append(f.requested, j.RequestedState)
		if j.RequestedState == "JOB_STATE_CANCELLED" {
			f.state = "JOB_STATE_CANCELLING"
		}
	default:
		http.Error(w, r.Method, http.StatusMethodNotAllowed)
		return
	}
	json.NewEncoder(w).Encode(&df.Job{Id: "2026-11-24_job", CurrentState: f.state})
}

func (f *fakeDataflow) set(state string) {
	f.mu.Lock()
	f.state = state
	f.mu.Unlock()
}

// startFake serves f on loopback and returns a Dataflow client of it.
func startFake(t *testing.T, f *fakeDataflow) *df.Service {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := df.NewService(context.Background(), option.WithEndpoint(srv.URL+"/"), option.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var fakeJob = dataflowJob{Project: "proj", Region: "europe-west1", ID: "2026-11-24_job"}

// TestDataflowCancel interrupts the watch of a running job: the job's
// cancellation is requested through the jobs API, the job's id is
// printed, and the watch returns the context's error.
func TestDataflowCancel(t *testing.T) {
	f := &fakeDataflow{state: "JOB_STATE_RUNNING"}
	c := startFake(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var out strings.Builder
	var done []int
	err := watchDataflow(ctx, c, fakeJob, 5*time.Millisecond, &out, func(n int) { done = append(done, n) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requested) != 1 || f.requested[0] != "JOB_STATE_CANCELLED" {
		t.Errorf("requested states %q, want one JOB_STATE_CANCELLED", f.requested)
	}
	if f.gets < 2 {
		t.Errorf("%d reads of the job's state: the watch did not poll", f.gets)
	}
	if len(done) == 0 || done[0] != 7 {
		t.Errorf("progress %v, want the attempted chunks counter, 7", done)
	}
	for _, want := range []string{"cancelling Dataflow job 2026-11-24_job", "JOB_STATE_CANCELLING"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed %q, want it to say %q", out.String(), want)
		}
	}
}

// TestDataflowCancelRefused: when the cancel request fails the user is
// told the command that cancels the job by hand.
func TestDataflowCancelRefused(t *testing.T) {
	f := &fakeDataflow{state: "JOB_STATE_RUNNING", refuse: true}
	c := startFake(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out strings.Builder
	if err := watchDataflow(ctx, c, fakeJob, 5*time.Millisecond, &out, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	want := "gcloud dataflow jobs cancel 2026-11-24_job --region europe-west1 --project proj"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "403") {
		t.Errorf("printed %q, want the refusal and %q", out.String(), want)
	}
}

// TestDataflowWatchEnds: the watch ends with the job, nil when it is
// done, an error naming the state when it failed.
func TestDataflowWatchEnds(t *testing.T) {
	for _, tc := range []struct {
		end  string
		fail bool
	}{{"JOB_STATE_DONE", false}, {"JOB_STATE_FAILED", true}, {"JOB_STATE_CANCELLED", true}} {
		f := &fakeDataflow{state: "JOB_STATE_RUNNING"}
		c := startFake(t, f)
		time.AfterFunc(50*time.Millisecond, func() { f.set(tc.end) })
		var out strings.Builder
		err := watchDataflow(context.Background(), c, fakeJob, 5*time.Millisecond, &out, nil)
		if (err != nil) != tc.fail || (err != nil && !strings.Contains(err.Error(), tc.end)) {
			t.Errorf("job ending %s: error %v", tc.end, err)
		}
		if len(f.requested) != 0 {
			t.Errorf("job ending %s: requested %q, want nothing", tc.end, f.requested)
		}
	}
}
