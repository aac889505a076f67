package hvp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestDsteqrSameAsGonum: eigenSym, which runs dsteqr (rotations applied
// a row at a time on several goroutines), gives the eigenvalues and
// eigenvectors of mat.EigenSym (gonum's Dsyev: Dsteqr with Dlasr) bit
// for bit, on random symmetric matrices small enough for the serial
// path and large enough for the parallel one, definite and indefinite,
// and with a repeated eigenvalue; and A V = V diag(w) to rounding.
func TestDsteqrSameAsGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{2, 3, 17, 130, 300} {
		for _, kind := range []string{"indefinite", "definite", "repeated"} {
			a := mat.NewSymDense(n, nil)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					a.SetSym(i, j, r.NormFloat64())
				}
			}
			switch kind {
			case "definite":
				var b mat.SymDense
				b.SymOuterK(1, a)
				a = &b
			case "repeated":
				// Rank one plus the identity: n-1 equal eigenvalues.
				v := make([]float64, n)
				for i := range v {
					v[i] = r.NormFloat64()
				}
				a = mat.NewSymDense(n, nil)
				a.SymRankOne(a, 1, mat.NewVecDense(n, v))
				for i := 0; i < n; i++ {
					a.SetSym(i, i, a.At(i, i)+1)
				}
			}
			var eig mat.EigenSym
			if !eig.Factorize(a, true) {
				t.Fatalf("n %d %s: gonum's factorisation failed", n, kind)
			}
			wantW := eig.Values(nil)
			var vecs mat.Dense
			eig.VectorsTo(&vecs)
			wantV := vecs.RawMatrix().Data
			w, v, ok, err := eigenSym(context.Background(), a, true)
			if err != nil || !ok {
				t.Fatalf("n %d %s: ok %v, error %v", n, kind, ok, err)
			}
			if !slices.Equal(w, wantW) || !slices.Equal(v, wantV) {
				t.Errorf("n %d %s: eigenvalues or eigenvectors differ from gonum's", n, kind)
			}
			// A V = V diag(w).
			worst := 0.0
			for i := 0; i < n; i++ {
				for k := 0; k < n; k++ {
					s := 0.0
					for j := 0; j < n; j++ {
						s += a.At(i, j) * v[j*n+k]
					}
					worst = math.Max(worst, math.Abs(s-w[k]*v[i*n+k]))
				}
			}
			if scale := math.Max(math.Abs(w[0]), math.Abs(w[n-1])); worst > 1e-12*scale*float64(n) {
				t.Errorf("n %d %s: |A V - V diag(w)| = %.3g (largest |eigenvalue| %.3g)", n, kind, worst, scale)
			}
		}
	}
}

// BenchmarkEigenSymPaper times the eigendecomposition of a random
// symmetric 481×481 matrix (the paper RNN's parameter count): eigenSym
// (dsteqr) against mat.EigenSym (gonum's Dsteqr), which give the same
// numbers.
func BenchmarkEigenSymPaper(b *testing.B) {
	const n = 481
	r := rand.New(rand.NewPCG(3, 5))
	a := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			a.SetSym(i, j, r.NormFloat64())
		}
	}
	b.Run("eigenSym", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok, err := eigenSym(context.Background(), a, true); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("gonum", func(b *testing.B) {
		for b.Loop() {
			var eig mat.EigenSym
			if !eig.Factorize(a, true) {
				b.Fatal("failed")
			}
		}
	})
}
