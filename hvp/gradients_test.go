package hvp_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// exampleChunks returns the sequences of whole (one batch of n sequences of T
// steps) as batches of c sequences that say where their examples are.
func exampleChunks(t testing.TB, whole *hvp.Objective, c, T int) *hvp.Objective {
	t.Helper()
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "paper_rnn.onnx"))
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

// TestStreamPerExampleGradients: the streamed per-example gradients and
// losses equal the per-sequence gradients of one backward pass per
// sequence (Gradients on one batch per sequence), every job is seen once,
// and the buffers handed out are at most workers × batch size vectors.
func TestStreamPerExampleGradients(t *testing.T) {
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
	err := ch.StreamPerExampleGradients(ctx, theta, sjobs, func(w, job int, grads [][]float64, losses []float64) error {
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
	err = ch.StreamPerExampleGradients(ctx, theta, sjobs, func(_, job int, _ [][]float64, _ []float64) error {
		if job == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("error %v, want one wrapping %v", err, stop)
	}
}

// TestPerExampleGradientsSplits: per-example gradients do not depend on the
// parallelism (one job of 200 sequences, its examples split over two
// cores or kept on one, agree to the bit) and, up to rounding, not on the
// batching (four jobs of 50 run in parallel; one backward pass per
// sequence).
func TestPerExampleGradientsSplits(t *testing.T) {
	whole, parts, theta := paperData(t, 200)
	ctx := context.Background()
	one, jobs1, out1 := chunked(t, whole, 200)
	four, jobs4, out4 := chunked(t, whole, 50)
	if err := one.PerExampleGradients(ctx, theta, jobs1, out1, nil); err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	serial := make([][][]float64, 1)
	serial[0] = make([][]float64, 200)
	if err := (&hvp.Objective{Batches: one.Batches}).PerExampleGradients(ctx, theta, jobs1, serial, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(2)
	if err := four.PerExampleGradients(ctx, theta, jobs4, out4, nil); err != nil {
		t.Fatal(err)
	}
	jobs := make([]hvp.Job, len(parts.Batches))
	for i := range jobs {
		jobs[i] = hvp.Job{Batch: i}
	}
	sep := make([][]float64, len(jobs))
	if err := parts.Gradients(ctx, theta, jobs, sep, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		a := out1[0][i]
		for j, v := range serial[0][i] {
			if a[j] != v {
				t.Fatalf("sequence %d, parameter %d: %v on two cores, %v on one", i, j, a[j], v)
			}
		}
		if e := relErr(a, out4[i/50][i%50], 1e-300); e > 1e-13 {
			t.Errorf("sequence %d: relative error %.3g between one batch and four", i, e)
		}
		if e := relErr(a, sep[i], 1e-300); e > 1e-12 {
			t.Errorf("sequence %d: relative error %.3g against one pass per sequence", i, e)
		}
	}
}
