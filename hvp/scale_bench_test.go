package hvp_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// scaleModel is a model of benchmarks/scale (make.py), or a skip.
func scaleModel(tb testing.TB, name string) *graph.Graph {
	tb.Helper()
	path := filepath.Join("..", "benchmarks", "scale", name+".onnx")
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("no %s (run benchmarks/scale/make.py)", path)
	}
	g, err := onnx.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// processData is n sequences of T = 10 steps of the paper's AR process
// (seeded by seed) for model g, in batches of at most chunk sequences
// (examples on axis 0).
func processData(tb testing.TB, g *graph.Graph, n, chunk int, seed uint64) *hvp.Objective {
	tb.Helper()
	const T = 10
	r := rand.New(rand.NewPCG(seed, 2))
	o := &hvp.Objective{}
	progs := map[int]*graph.Program{}
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		x := graph.NewFloat([]int{m, T, 1}, nil)
		y := make([]float64, m*T)
		w := make([]float64, m*T)
		arSequences(r, T, x.F, y)
		for i := range w {
			w[i] = 1
		}
		p, ok := progs[m]
		if !ok {
			var err error
			if p, err = g.Compile([]*graph.Tensor{x}); err != nil {
				tb.Fatal(err)
			}
			progs[m] = p
		}
		o.Batches = append(o.Batches, hvp.Batch{Program: p, Inputs: []*graph.Tensor{x}, Target: y, Weight: w, ExampleAxes: []int{0}})
	}
	return o
}

// BenchmarkScaleGNVP is one Gauss-Newton-vector product over n sequences,
// the unit of cost of the low-rank factor (k + probes + trace samples of
// them) and of every CG iteration.
func BenchmarkScaleGNVP(b *testing.B) {
	for _, model := range []string{"rnn64", "lstm64"} {
		for _, n := range []int{1000, 10000} {
			b.Run(model+"/n="+strconv.Itoa(n), func(b *testing.B) {
				g := scaleModel(b, model)
				o := processData(b, g, n, 500, 1)
				theta := g.Theta()
				v := randUnit(rand.New(rand.NewPCG(1, 1)), len(theta))
				out := make([]float64, len(theta))
				for b.Loop() {
					if err := o.Apply(context.Background(), hvp.GaussNewton, theta, v, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkScalePerExampleGradients is the per-sequence gradients of 1000
// sequences in batches of 500 (the audit's block-gradient phase).
func BenchmarkScalePerExampleGradients(b *testing.B) {
	for _, model := range []string{"rnn64", "lstm64"} {
		b.Run(model, func(b *testing.B) {
			g := scaleModel(b, model)
			o := processData(b, g, 1000, 500, 1)
			theta := g.Theta()
			jobs := []hvp.Job{{Batch: 0}, {Batch: 1}}
			out := [][][]float64{make([][]float64, 500), make([][]float64, 500)}
			for b.Loop() {
				if err := o.PerExampleGradients(context.Background(), theta, jobs, out, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScaleLowRankSolve is SolveAll of a rank-k factor of the LSTM
// (P = 17,217) on 1000 right-hand sides.
func BenchmarkScaleLowRankSolve(b *testing.B) {
	g := scaleModel(b, "lstm64")
	o := processData(b, g, 100, 100, 1)
	theta := g.Theta()
	for _, k := range []int{50, 200} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			f, err := hvp.NewLowRank(context.Background(), o, theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: k, TraceSamples: 2})
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(2, 2))
			rhs := make([][]float64, 1000)
			for j := range rhs {
				rhs[j] = randUnit(r, len(theta))
			}
			x := make([][]float64, len(rhs))
			for b.Loop() {
				if err := f.SolveAll(context.Background(), x, rhs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLowRankMeasureRNN64 is TestLowRankMeasure on the 4,353-parameter
// RNN of benchmarks/scale (run with -v and MEASURE=rnn64; minutes).
func TestLowRankMeasureRNN64(t *testing.T) {
	if os.Getenv("MEASURE") != "rnn64" {
		t.Skip("a measurement: run with -v and MEASURE=rnn64")
	}
	ctx := context.Background()
	g := scaleModel(t, "rnn64")
	theta := g.Theta()
	train := processData(t, g, 300, 100, 1)
	test := processData(t, g, 100, 100, 2)
	c, err := train.Dense(ctx, hvp.GaussNewton, theta)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]hvp.Job, len(train.Batches))
	out := make([][][]float64, len(jobs))
	for i := range jobs {
		jobs[i] = hvp.Job{Batch: i}
		out[i] = make([][]float64, 100)
	}
	if err := train.PerExampleGradients(ctx, theta, jobs, out, nil); err != nil {
		t.Fatal(err)
	}
	var b [][]float64
	for _, o := range out {
		b = append(b, o...)
	}
	testNorm := func(v []float64) float64 {
		cv := make([]float64, len(v))
		if err := test.Apply(ctx, hvp.GaussNewton, theta, v, cv); err != nil {
			t.Fatal(err)
		}
		return dot(v, cv)
	}
	for _, rho := range []float64{hvp.DefaultGaussNewtonDamping} { // 1e-6 and 1e-2 in RESULTS.md's first table
		var want [][]float64
		for _, k := range []int{50, 200, 800} {
			f, err := hvp.NewLowRank(ctx, train, theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: k, Damping: rho, Seed: 5, Probe: b[:16]})
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = exactSolves(t, c, f.Lambda, b)
			}
			x := make([][]float64, len(b))
			if err := f.SolveAll(ctx, x, b); err != nil {
				t.Fatal(err)
			}
			param, trainErr, _ := solveErrors(x, want, c, c)
			// Test predictions on 30 right-hand sides (two products each).
			testErr := 0.0
			for j := 0; j < 30; j++ {
				e := make([]float64, len(theta))
				for i := range e {
					e[i] = x[j][i] - want[j][i]
				}
				testErr += math.Sqrt(testNorm(e)/testNorm(want[j])) / 30
			}
			t.Logf("P=%d rho=%-6g k=%-4d products=%-4d  probed complement: parameters %.3g  train predictions %.3g  test predictions %.3g", len(theta), rho, k, f.Products, param, trainErr, testErr)
		}
	}
}

// BenchmarkScaleLowRankBuild is NewLowRank on the LSTM (P = 17,217) with
// 10,000 sequences, k = 100 and 16 trace vectors: the curvature phase of
// the scalable path on a 10k subsample.
func BenchmarkScaleLowRankBuild(b *testing.B) {
	g := scaleModel(b, "lstm64")
	o := processData(b, g, 10000, 500, 1)
	theta := g.Theta()
	for b.Loop() {
		f, err := hvp.NewLowRank(context.Background(), o, theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: 100})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(f.Products), "products")
	}
}

// BenchmarkScaleGNVPOneBatch is BenchmarkScaleGNVP's lstm64 n=10000 with
// all sequences in one batch, as the audit groups equal-length sequences
// today: the buffers of one batch grow with its size.
func BenchmarkScaleGNVPOneBatch(b *testing.B) {
	g := scaleModel(b, "lstm64")
	o := processData(b, g, 10000, 10000, 1)
	theta := g.Theta()
	v := randUnit(rand.New(rand.NewPCG(1, 1)), len(theta))
	out := make([]float64, len(theta))
	for b.Loop() {
		if err := o.Apply(context.Background(), hvp.GaussNewton, theta, v, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScaleApplyMany is eight Gauss-Newton-vector products over
// 1000 sequences of the LSTM, one Apply each ("single"), one ApplyMany
// sharing each batch's forward pass ("many": the products of the
// factor's trace vectors, probes and side-by-side PCG solves), or one at
// a time with the forward passes kept ("kept": Lanczos).
func BenchmarkScaleApplyMany(b *testing.B) {
	g := scaleModel(b, "lstm64")
	o := processData(b, g, 1000, 500, 1)
	theta := g.Theta()
	r := rand.New(rand.NewPCG(1, 1))
	v, out := make([][]float64, 8), make([][]float64, 8)
	for j := range v {
		v[j], out[j] = randUnit(r, len(theta)), make([]float64, len(theta))
	}
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			for j := range v {
				if err := o.Apply(context.Background(), hvp.GaussNewton, theta, v[j], out[j]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("many", func(b *testing.B) {
		for b.Loop() {
			if err := o.ApplyMany(context.Background(), hvp.GaussNewton, theta, v, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	// One vector at a time, as Lanczos takes them, through the factor's
	// operator: every batch's forward pass run on its first call and kept.
	op, err := (&hvp.LowRank{P: len(theta)}).OperatorMany(o, hvp.GaussNewton, theta)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			for j := range v {
				if err := op(context.Background(), v[j:j+1], out[j:j+1]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
