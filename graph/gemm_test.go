package graph

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveGemm is the reference: C = op(A) op(B) + beta C.
func naiveGemm(transA, transB bool, m, n, k int, a, b []float64, beta float64, c []float64) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := beta * c[i*n+j]
			for p := 0; p < k; p++ {
				av := a[i*k+p]
				if transA {
					av = a[p*m+i]
				}
				bv := b[p*n+j]
				if transB {
					bv = b[j*k+p]
				}
				s += av * bv
			}
			out[i*n+j] = s
		}
	}
	return out
}

// TestGemm checks every path of gemm (assembly kernel with its 8- and
// 4-column tiles and edges, skinny loops, transposes, beta 0 and 1)
// against the naive triple loop.
func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 20, 21, 33}
	for _, m := range sizes {
		for _, n := range sizes {
			for _, k := range []int{1, 3, 4, 20, 37} {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					for _, beta := range []float64{0, 1} {
						a := make([]float64, m*k)
						b := make([]float64, k*n)
						c := make([]float64, m*n)
						for _, s := range [][]float64{a, b, c} {
							for i := range s {
								s[i] = r.NormFloat64()
							}
						}
						want := naiveGemm(tr[0], tr[1], m, n, k, a, b, beta, c)
						gemm(tr[0], tr[1], m, n, k, 1, a, b, beta, c)
						for i := range want {
							if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
								t.Fatalf("m=%d n=%d k=%d trans=%v beta=%g: c[%d] = %.17g, want %.17g", m, n, k, tr, beta, i, c[i], want[i])
							}
						}
					}
				}
			}
		}
	}
	if !useAVX2 {
		t.Log("no AVX2/FMA on this machine: the assembly kernel was not exercised")
	}
}

func BenchmarkGemm1000x20x20(b *testing.B) {
	m, n, k := 1000, 20, 20
	x := make([]float64, m*k)
	y := make([]float64, k*n)
	c := make([]float64, m*n)
	for b.Loop() {
		gemm(false, false, m, n, k, 1, x, y, 0, c)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

func BenchmarkGemmTransA20x20x1000(b *testing.B) {
	m, n, k := 20, 20, 1000
	x := make([]float64, m*k)
	y := make([]float64, k*n)
	c := make([]float64, m*n)
	for b.Loop() {
		gemm(true, false, m, n, k, 1, x, y, 1, c)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}
