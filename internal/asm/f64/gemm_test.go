package f64

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
	eachTier(t, testGemm)
}

// eachTier runs test on every tier this build and processor have (the
// purego build tag leaves only Go), restoring the detected one.
func eachTier(t *testing.T, test func(t *testing.T)) {
	for _, tier := range Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			defer Use(tier)()
			test(t)
		})
	}
}

func testGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 20, 21, 24, 25, 33, 50}
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
						Gemm(tr[0], tr[1], m, n, k, 1, a, b, beta, c)
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
}

// TestGemmAddend checks C = D + A B with D a full matrix or one repeated
// row, against the naive loop, on every shape the AVX-512 kernel takes.
func TestGemmAddend(t *testing.T) {
	if Best() < AVX512 {
		t.Skip("no AVX-512 in this build or on this machine: GemmAddend always declines")
	}
	restore := Use(Go)
	declined := !GemmAddend(4, 4, 1, make([]float64, 4), make([]float64, 4), make([]float64, 16), make([]float64, 16), 4)
	restore()
	if !declined {
		t.Fatal("GemmAddend accepted on the Go tier")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range []int{4, 5, 8, 11, 1000} {
		for _, n := range []int{3, 8, 20, 24, 30} {
			for _, k := range []int{0, 1, 20} {
				for _, row := range []bool{false, true} {
					a, b := make([]float64, m*k), make([]float64, k*n)
					d := make([]float64, m*n)
					if row {
						d = d[:n]
					}
					for _, s := range [][]float64{a, b, d} {
						for i := range s {
							s[i] = r.NormFloat64()
						}
					}
					full := d
					ldd := n
					if row {
						full, ldd = make([]float64, m*n), 0
						for i := 0; i < m; i++ {
							copy(full[i*n:], d)
						}
					}
					want := naiveGemm(false, false, m, n, k, a, b, 1, full)
					c := make([]float64, m*n)
					if !GemmAddend(m, n, k, a, b, c, d, ldd) {
						t.Fatalf("m=%d n=%d k=%d: declined", m, n, k)
					}
					for i := range want {
						if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
							t.Fatalf("m=%d n=%d k=%d row=%v: c[%d] = %.17g, want %.17g", m, n, k, row, i, c[i], want[i])
						}
					}
				}
			}
		}
	}
}

func BenchmarkGemm1000x20x20(b *testing.B) {
	m, n, k := 1000, 20, 20
	x := make([]float64, m*k)
	y := make([]float64, k*n)
	c := make([]float64, m*n)
	for b.Loop() {
		Gemm(false, false, m, n, k, 1, x, y, 0, c)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

func BenchmarkGemmTransA20x20x1000(b *testing.B) {
	m, n, k := 20, 20, 1000
	x := make([]float64, m*k)
	y := make([]float64, k*n)
	c := make([]float64, m*n)
	for b.Loop() {
		Gemm(true, false, m, n, k, 1, x, y, 1, c)
	}
	b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

// TestMatMul checks the exported product, serial and split over
// goroutines, with every transposition, against the naive loop.
func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	eachTier(t, func(t *testing.T) {
		for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 2}, {7, 9, 0}, {13, 21, 17}, {481, 300, 481}, {130, 3, 2000}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				a, b := make([]float64, m*k), make([]float64, k*n)
				for _, s := range [][]float64{a, b} {
					for i := range s {
						s[i] = r.NormFloat64()
					}
				}
				want := naiveGemm(tr[0], tr[1], m, n, k, a, b, 0, make([]float64, m*n))
				c := make([]float64, m*n)
				for i := range c {
					c[i] = math.NaN() // must be overwritten
				}
				MatMul(tr[0], tr[1], m, n, k, a, b, c)
				for i := range want {
					if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i]))*math.Sqrt(float64(k+1)) {
						t.Fatalf("%dx%dx%d trans=%v: c[%d] = %.17g, want %.17g", m, n, k, tr, i, c[i], want[i])
					}
				}
			}
		}
	})
}

// TestElementwise checks the tanh-derivative and accumulation loops (both
// kernels) against their formulas on lengths around the vector width.
func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	eachTier(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 8, 9, 16, 23, 100} {
			v := make([][]float64, 6)
			for i := range v {
				v[i] = make([]float64, n)
				for j := range v[i] {
					v[i][j] = r.NormFloat64()
				}
			}
			y, g, dg, dx, out := v[0], v[1], v[2], v[3], v[4]
			for j := range y {
				y[j] = math.Tanh(y[j])
			}
			check := func(name string, got, want []float64) {
				for j := range want {
					if math.Abs(got[j]-want[j]) > 1e-14*(1+math.Abs(want[j])) {
						t.Fatalf("n=%d %s[%d] = %.17g, want %.17g", n, name, j, got[j], want[j])
					}
				}
			}
			want := make([]float64, n)
			for j := range want {
				want[j] = (1 - y[j]*y[j]) * dx[j]
			}
			TanhJVP(out, y, dx)
			check("jvp", out, want)
			for j := range want {
				want[j] = out[j] + (1-y[j]*y[j])*g[j]
			}
			TanhVJP(out, y, g)
			check("vjp", out, want)
			for j := range want {
				want[j] = out[j] + (1-y[j]*y[j])*(dg[j]-2*y[j]*dx[j]*g[j])
			}
			TanhVJPTangent(out, y, g, dg, dx)
			check("vjpTangent", out, want)
			for j := range want {
				want[j] = out[j] + v[5][j]
			}
			AddTo(out, v[5])
			check("addTo", out, want)
		}
	})
}
