package hvp_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// paperData builds the paper-size problem: the vanilla RNN with 20 hidden
// units (481 parameters) and n sequences of T = 10 steps from the paper's
// AR process, as one batch (whole) and as one batch per sequence (parts).
func paperData(b testing.TB, n int) (whole, parts *hvp.Objective, theta []float64) {
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		b.Fatal(err)
	}
	const T = 10
	r := rand.New(rand.NewPCG(1, 2))
	x := graph.NewFloat([]int{n, T, 1}, nil)
	y := make([]float64, n*T)
	arSequences(r, T, x.F, y)
	w := make([]float64, n*T)
	for i := range w {
		w[i] = 1
	}
	p, err := g.Compile([]*graph.Tensor{x})
	if err != nil {
		b.Fatal(err)
	}
	whole = &hvp.Objective{Batches: []hvp.Batch{{Program: p, Inputs: []*graph.Tensor{x}, Target: y, Weight: w, ExampleAxes: []int{0}}}}
	parts = &hvp.Objective{}
	var p1 *graph.Program
	for i := 0; i < n; i++ {
		xi := graph.NewFloat([]int{1, T, 1}, x.F[i*T:(i+1)*T])
		if p1 == nil {
			if p1, err = g.Compile([]*graph.Tensor{xi}); err != nil {
				b.Fatal(err)
			}
		}
		parts.Batches = append(parts.Batches, hvp.Batch{Program: p1, Inputs: []*graph.Tensor{xi}, Target: y[i*T : (i+1)*T], Weight: w[i*T : (i+1)*T]})
	}
	return whole, parts, g.Theta()
}

// arSequences fills x and y (len(x)/T sequences of T steps, row-major)
// from the paper's AR process: x_t ~ N(1, 2^2), s_t = 0.9 s_{t-1} + x_t,
// y_t = s_t + N(0, (0.1 t)^2).
func arSequences(r *rand.Rand, T int, x, y []float64) {
	for i := 0; i < len(x)/T; i++ {
		s := 0.0
		for t := 0; t < T; t++ {
			v := 1 + 2*r.NormFloat64()
			x[i*T+t] = v
			s = 0.9*s + v
			y[i*T+t] = s + 0.1*float64(t+1)*r.NormFloat64()
		}
	}
}

func BenchmarkGradientPaper(b *testing.B) {
	whole, _, theta := paperData(b, 1000)
	grad := make([]float64, len(theta))
	// One call before timing, as the PyTorch timings have.
	if _, err := whole.Gradient(context.Background(), theta, grad); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := whole.Gradient(context.Background(), theta, grad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHVPPaper(b *testing.B) {
	whole, _, theta := paperData(b, 1000)
	v := randUnit(rand.New(rand.NewPCG(1, 1)), len(theta))
	hv := make([]float64, len(theta))
	if err := whole.HVP(context.Background(), theta, v, hv); err != nil { // warm-up
		b.Fatal(err)
	}
	for b.Loop() {
		if err := whole.HVP(context.Background(), theta, v, hv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPerSequenceGradientsPaper computes the 1000 per-sequence
// gradients as the audit does: batched passes over batches of 250
// sequences, split by example (Objective.PerExampleGradients).
func BenchmarkPerSequenceGradientsPaper(b *testing.B) {
	whole, _, theta := paperData(b, 1000)
	o, jobs, out := chunked(b, whole, 250)
	// Warm-up: the first call also analyses the program (graph.Program.PerExample,
	// about 2 ms here) and allocates the buffers.
	if err := o.PerExampleGradients(context.Background(), theta, jobs, out, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := o.PerExampleGradients(context.Background(), theta, jobs, out, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPerSequenceGradientsSeparatePaper computes them with one
// backward pass per sequence (Objective.Gradients over one batch each),
// the way for programs whose examples do not separate.
func BenchmarkPerSequenceGradientsSeparatePaper(b *testing.B) {
	_, parts, theta := paperData(b, 1000)
	jobs := make([]hvp.Job, len(parts.Batches))
	for i := range jobs {
		jobs[i] = hvp.Job{Batch: i}
	}
	out := make([][]float64, len(jobs))
	if err := parts.Gradients(context.Background(), theta, jobs, out, nil); err != nil { // warm-up
		b.Fatal(err)
	}
	for b.Loop() {
		if err := parts.Gradients(context.Background(), theta, jobs, out, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// chunked splits a one-batch objective over sequences into batches of at
// most size sequences, with a job and result slots for each. Batches of
// one size share one compiled Program, as the audit's do.
func chunked(b testing.TB, whole *hvp.Objective, size int) (*hvp.Objective, []hvp.Job, [][][]float64) {
	bt := whole.Batches[0]
	x := bt.Inputs[0]
	n, T := x.Shape[0], x.Shape[1]
	o := &hvp.Objective{}
	var jobs []hvp.Job
	var out [][][]float64
	progs := map[int]*graph.Program{}
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		xi := graph.NewFloat([]int{hi - lo, T, 1}, x.F[lo*T:hi*T])
		p, ok := progs[hi-lo]
		if !ok {
			var err error
			if p, err = bt.Program.Graph().Compile([]*graph.Tensor{xi}); err != nil {
				b.Fatal(err)
			}
			progs[hi-lo] = p
		}
		jobs = append(jobs, hvp.Job{Batch: len(o.Batches)})
		o.Batches = append(o.Batches, hvp.Batch{Program: p, Inputs: []*graph.Tensor{xi}, Target: bt.Target[lo*T : hi*T], Weight: bt.Weight[lo*T : hi*T], ExampleAxes: []int{0}})
		out = append(out, make([][]float64, hi-lo))
	}
	return o, jobs, out
}

func BenchmarkDenseHessianPaper(b *testing.B) {
	whole, _, theta := paperData(b, 1000)
	if _, err := whole.Dense(context.Background(), hvp.Hessian, theta); err != nil { // warm-up
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := whole.Dense(context.Background(), hvp.Hessian, theta); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDenseHessianPaperChunked is BenchmarkDenseHessianPaper over
// batches of 500 to 20 sequences.
func BenchmarkDenseHessianPaperChunked(b *testing.B) {
	for _, size := range []int{500, 100, 48, 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			whole, _, theta := paperData(b, 1000)
			o, _, _ := chunked(b, whole, size)
			if _, err := o.Dense(context.Background(), hvp.Hessian, theta); err != nil { // warm-up
				b.Fatal(err)
			}
			c0 := cpuSeconds()
			for b.Loop() {
				if _, err := o.Dense(context.Background(), hvp.Hessian, theta); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
		})
	}
}

// cpuSeconds is the process's user and system CPU time so far: on the
// shared machine the wall time of a benchmark depends on the load, its
// CPU time much less.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
