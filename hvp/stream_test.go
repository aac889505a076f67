package hvp_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/graph/graphtest"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// exampleChunks returns the sequences of whole (one batch of n sequences of T
// steps) as batches of c sequences that say where their examples are.
func exampleChunks(t testing.TB, whole *hvp.Objective, c, T int) *hvp.Objective {
	t.Helper()
	g, err := onnx.Load(filepath.Join(graphtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	b0 := whole.Batches[0]
	n := len(b0.Target) / T
	out := &hvp.Objective{Loss: whole.Loss, Workers: 2}
	progs := map[int]*graph.Program{}
	for lo := 0; lo < n; lo += c {
		hi := min(lo+c, n)
		x := graph.NewFloat([]int{hi - lo, T, 1}, b0.Inputs[0].F[lo*T:hi*T])
		p, ok := progs[hi-lo]
		if !ok {
			if p, err = g.Compile([]*graph.Tensor{x}); err != nil {
				t.Fatal(err)
			}
			progs[hi-lo] = p
		}
		out.Batches = append(out.Batches, hvp.Batch{Program: p, Inputs: []*graph.Tensor{x}, Target: b0.Target[lo*T : hi*T], Weight: b0.Weight[lo*T : hi*T], ExampleAxes: []int{0}})
	}
	return out
}

// TestStreamExampleGradients: the streamed per-example gradients and
// losses equal the per-sequence gradients of one backward pass per
// sequence (Gradients on one batch per sequence), every job is seen once,
// and the buffers handed out are at most workers × batch size vectors.
func TestStreamExampleGradients(t *testing.T) {
	ctx := context.Background()
	const n, T, c = 53, 10, 8
	whole, parts, theta := paperData(t, n)
	want := make([][]float64, n)
	wantLoss := make([]float64, n)
	jobs := make([]hvp.Job, n)
	for i := range jobs {
		jobs[i] = hvp.Job{Batch: i}
	}
	if err := parts.Gradients(ctx, theta, jobs, want, wantLoss); err != nil {
		t.Fatal(err)
	}
	ch := exampleChunks(t, whole, c, T)
	sjobs := make([]hvp.Job, len(ch.Batches))
	for i := range sjobs {
		sjobs[i] = hvp.Job{Batch: i}
	}
	var mu sync.Mutex
	seen := make([]int, len(sjobs))
	bufs := map[*float64]bool{}
	err := ch.StreamExampleGradients(ctx, theta, sjobs, func(w, job int, grads [][]float64, losses []float64) error {
		mu.Lock()
		defer mu.Unlock()
		seen[job]++
		for e, g := range grads {
			bufs[&g[0]] = true
			i := job*c + e
			if d := relErr(g, want[i], 1e-12); d > 1e-10 {
				t.Errorf("sequence %d: streamed gradient differs by %.3g", i, d)
			}
			if d := losses[e] - wantLoss[i]; d > 1e-10*wantLoss[i] || -d > 1e-10*wantLoss[i] {
				t.Errorf("sequence %d: loss %.12g, want %.12g", i, losses[e], wantLoss[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for j, s := range seen {
		if s != 1 {
			t.Errorf("job %d seen %d times", j, s)
		}
	}
	if len(bufs) > ch.Workers*c {
		t.Errorf("%d distinct gradient buffers, want at most workers × batch = %d", len(bufs), ch.Workers*c)
	}
	// An error of f stops the pass and comes back wrapped.
	stop := errors.New("stop")
	err = ch.StreamExampleGradients(ctx, theta, sjobs, func(_, job int, _ [][]float64, _ []float64) error {
		if job == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("error %v, want one wrapping %v", err, stop)
	}
}
