package table

import (
	"math"
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
	benchP     = 17217
	benchK     = 200
	benchChunk = 64 // audit's streamBatch
)

// calibrationAlphas is the grid of audit's calibration curve.
var calibrationAlphas = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}

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
	vecs := make([][]float64, benchChunk)
	for i := range vecs {
		vecs[i] = randVec(r, benchP)
	}
	pr := NewProjector(U, benchP)
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		pr.Rows(vecs, nil)
	}
	reportCPU(b, c0)
	b.ReportMetric(float64(2*benchK*benchP*benchChunk)*float64(b.N)/(cpuTime()-c0).Seconds()/1e9, "Gflop/cpu-s")
}

// BenchmarkFinalizeLimits is the limits of one finalize chunk: 32
// points against a table of 100,000 blocks, as the LowRank solver runs it
// (TableSpec.Finalize: the table's index built once, outside the timing).
// "large" has shifts as large as the residuals (every shift formed, 2kNq
// flop, and two order statistics of N values per point, as before the
// index); "small" has shifts of the order of the residuals' spacing, as
// the 100k-sequence LSTM's table (benchmarks/scale): the bounds settle
// most blocks. "full" forms every shift of the same table (finalizeFull)
// for comparison.
func BenchmarkFinalizeLimits(b *testing.B) {
	const n, q, F = 100000, 32, 10
	for _, c := range []struct {
		name  string
		small bool
		full  bool
	}{{"large", false, false}, {"large/full", false, true}, {"small", true, false}, {"small/full", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			t := &BlockTable{N: n, K: benchK, F: F, Coef: randVec(r, n*benchK), Res: randVec(r, n*F)}
			for i, v := range t.Res {
				t.Res[i] = math.Abs(v)
			}
			pts := make([]PointRecord, q)
			for i := range pts {
				pts[i] = PointRecord{F: r.NormFloat64(), Forecast: i % F, Skip: -1, Y: r.NormFloat64(), Labelled: true, G: randVec(r, benchK), H: []float64{}}
			}
			if c.small {
				// As the LSTM's table: a block's coefficients grow from
				// 1e-8 to 1e-4 along the factor's directions (of
				// decreasing curvature), a point's fall from 3 to 3e-3;
				// blocks differ in size by a log-normal factor; residuals
				// |N(0, 0.2^2)|.
				for bl := 0; bl < n; bl++ {
					sb := math.Exp(0.5 * r.NormFloat64())
					for j := 0; j < benchK; j++ {
						t.Coef[bl*benchK+j] *= sb * 1e-8 * math.Pow(1e4, float64(j)/benchK)
					}
				}
				for i := range t.Res {
					t.Res[i] *= 0.2
				}
				for _, p := range pts {
					for j := range p.G {
						p.G[j] *= 3 * math.Pow(1e-3, float64(j)/benchK)
					}
				}
			}
			spec := &TableSpec{Alpha: 0.1, Alphas: calibrationAlphas, Table: *t}
			if _, err := spec.Finalize(&FinalizeChunk{Points: pts}); err != nil {
				b.Fatal(err)
			}
			_, formed, _ := indexedLimits(0.1, calibrationAlphas, t, spec.index, pts)
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				var err error
				if c.full {
					_, err = finalizeFull(0.1, calibrationAlphas, t, pts)
				} else {
					_, err = spec.Finalize(&FinalizeChunk{Points: pts})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
			b.ReportMetric(float64(formed)/q, "shifts/point")
		})
	}
}
