package audit

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time: on a machine shared
// with other work the benchmarks report it per operation (cpu-ms/op)
// beside the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU milliseconds per operation since c0.
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
}

// The low-rank path's per-chunk kernels at the scale benchmark's sizes
// (benchmarks/scale: the 64-unit LSTM, P = 17,217, rank k = 200, chunks
// of 64 sequences, F = 10 forecast slots). Their flop rates are the
// figures of benchmarks/scale/RESULTS.md's W-worker model.

const (
	benchP = 17217
	benchK = 200
)

func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// BenchmarkProjectRows is the block pass's projection U g_b of one chunk
// of 64 gradients (2kP = 6.9 Mflop per sequence).
func BenchmarkProjectRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	U := randVec(r, benchK*benchP)
	vecs := make([][]float64, streamBatch)
	for i := range vecs {
		vecs[i] = randVec(r, benchP)
	}
	pr := newProjector(U, benchP)
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		pr.rows(vecs, nil)
	}
	reportCPU(b, c0)
	b.ReportMetric(float64(2*benchK*benchP*streamBatch)*float64(b.N)/(cpuTime()-c0).Seconds()/1e9, "Gflop/cpu-s")
}

// BenchmarkFinalizeLimits is the limits of one finalize chunk: 32
// points against a table of 100,000 blocks (their shifts, 2kNq flop, and
// two order statistics of N values per point).
func BenchmarkFinalizeLimits(b *testing.B) {
	const n, q, F = 100000, 32, 10
	r := rand.New(rand.NewPCG(3, 4))
	t := &BlockTable{N: n, K: benchK, F: F, Coef: randVec(r, n*benchK), Res: randVec(r, n*F)}
	for i, v := range t.Res {
		if v < 0 {
			t.Res[i] = -v
		}
	}
	pts := make([]PointRecord, q)
	for i := range pts {
		pts[i] = PointRecord{F: r.NormFloat64(), Forecast: i % F, Skip: -1, Y: r.NormFloat64(), Labelled: true, G: randVec(r, benchK), H: []float64{}}
	}
	b.ResetTimer()
	c0 := cpuTime()
	defer func() { reportCPU(b, c0) }()
	for range b.N {
		if _, err := FinalizeLimits(0.1, calibrationAlphas, t, pts); err != nil {
			b.Fatal(err)
		}
	}
}
