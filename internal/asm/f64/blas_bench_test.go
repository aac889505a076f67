package f64

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/internal/par"
)

// These benchmarks decide whether to plug the kernels into gonum through
// blas64.Use, so that mat's products and factorisations run on them too
// (doc.go, "gonum's mat"). kernelBLAS is gonum's implementation with Dgemm
// on the AVX-512 kernel where it applies (alpha 1, beta 0 or 1, B not
// transposed: the kernel reads A through strides and B by rows).

type kernelBLAS struct{ gonum.Implementation }

func (kernelBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if !use.avx512 || alpha != 1 || (beta != 0 && beta != 1) || tB != blas.NoTrans || m < 4 || n < 4 || k < 1 {
		gonum.Implementation{}.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	aRow, aInner := lda, 1
	if tA != blas.NoTrans {
		aRow, aInner = 1, lda
	}
	w := 1
	if m*n*k >= 1<<20 {
		w = min(runtime.GOMAXPROCS(0), (m+3)/4)
	}
	par.Ranges((m+3)/4, w, func(lo, hi int) {
		r0, r1 := 4*lo, min(m, 4*hi)
		var d []float64
		ldd := 0
		if beta == 1 {
			d, ldd = c[r0*ldc:], ldc
		}
		gemmNN512(r1-r0, n, k, a[r0*aRow:], aRow, aInner, b, ldb, c[r0*ldc:], ldc, d, ldd)
	})
}

// withBLAS runs f with impl as mat's BLAS.
func withBLAS(impl blas.Float64, f func()) {
	blas64.Use(impl)
	defer blas64.Use(gonum.Implementation{})
	f()
}

// spd is a P×P symmetric positive semi-definite matrix like a curvature
// (a Gram matrix of 2P random rows) with a seeded generator.
func spd(P int) *mat.SymDense {
	r := rand.New(rand.NewPCG(1, uint64(P)))
	j := mat.NewDense(2*P, P, nil)
	for i := 0; i < 2*P; i++ {
		for k := 0; k < P; k++ {
			j.Set(i, k, r.NormFloat64())
		}
	}
	s := mat.NewSymDense(P, nil)
	s.SymOuterK(1, j.T())
	return s
}

func impls() []struct {
	name string
	impl blas.Float64
} {
	return []struct {
		name string
		impl blas.Float64
	}{{"gonum", gonum.Implementation{}}, {"kernels", kernelBLAS{}}}
}

// BenchmarkBLASDenseMul is mat.Dense.Mul of two P×P matrices.
func BenchmarkBLASDenseMul(b *testing.B) {
	if !use.avx512 {
		b.Skip("no AVX-512 kernel")
	}
	for _, P := range []int{481, 1201} {
		x := mat.DenseCopyOf(spd(P))
		for _, im := range impls() {
			b.Run(fmt.Sprintf("P=%d/%s", P, im.name), func(b *testing.B) {
				var c mat.Dense
				withBLAS(im.impl, func() {
					for b.Loop() {
						c.Mul(x, x)
					}
				})
			})
		}
	}
}

// BenchmarkBLASEigenSym is the dense exact solver's factorisation,
// mat.EigenSym with vectors, of a P×P curvature-like matrix. It reports
// the largest difference of the eigenvalues from gonum's, relative to
// the largest eigenvalue (rel_diff).
func BenchmarkBLASEigenSym(b *testing.B) {
	if !use.avx512 {
		b.Skip("no AVX-512 kernel")
	}
	for _, P := range []int{481, 1201} {
		s := spd(P)
		var ref mat.EigenSym
		ref.Factorize(s, true)
		want := ref.Values(nil)
		for _, im := range impls() {
			b.Run(fmt.Sprintf("P=%d/%s", P, im.name), func(b *testing.B) {
				var eig mat.EigenSym
				withBLAS(im.impl, func() {
					for b.Loop() {
						if !eig.Factorize(s, true) {
							b.Fatal("factorisation failed")
						}
					}
				})
				diff := 0.0
				for i, v := range eig.Values(nil) {
					diff = math.Max(diff, math.Abs(v-want[i]))
				}
				b.ReportMetric(diff/want[P-1], "rel_diff")
			})
		}
	}
}
