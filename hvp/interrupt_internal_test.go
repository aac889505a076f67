package hvp

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestInterruptible: a factorisation that has not finished does not hold
// up a cancelled context, and one that finishes gives its result.
func TestInterruptible(t *testing.T) {
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := interruptible(ctx, func() bool { <-release; return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
	close(release)
	if ok, err := interruptible(context.Background(), func() bool { return true }); !ok || err != nil {
		t.Errorf("finished: %v, %v; want true, nil", ok, err)
	}
}

// TestEigenSymAsGonum: eigenSym gives mat.EigenSym's eigenvalues and
// eigenvectors bit for bit (the same LAPACK calls with the same
// workspace), with and without vectors, on matrices small and large
// enough for the blocked reduction, and one scaled by 1e160 (Dsyev's own
// scaling: eigenSym hands it to mat.EigenSym); a cancelled context stops
// it before it starts.
func TestEigenSymAsGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		n     int
		scale float64
	}{{1, 1}, {7, 1}, {200, 1}, {40, 1e160}} {
		a := mat.NewSymDense(tc.n, nil)
		for i := 0; i < tc.n; i++ {
			for j := i; j < tc.n; j++ {
				a.SetSym(i, j, tc.scale*r.NormFloat64())
			}
		}
		for _, vectors := range []bool{false, true} {
			var eig mat.EigenSym
			if !eig.Factorize(a, vectors) {
				t.Fatal("mat.EigenSym failed")
			}
			w, v, ok, err := eigenSym(context.Background(), a, vectors)
			if !ok || err != nil {
				t.Fatalf("n %d: ok %v, error %v", tc.n, ok, err)
			}
			if want := eig.Values(nil); !slices.Equal(w, want) {
				t.Errorf("n %d, scale %g, vectors %v: eigenvalues differ from mat.EigenSym's", tc.n, tc.scale, vectors)
			}
			if vectors {
				var vecs mat.Dense
				eig.VectorsTo(&vecs)
				if !slices.Equal(v, vecs.RawMatrix().Data) {
					t.Errorf("n %d, scale %g: eigenvectors differ from mat.EigenSym's", tc.n, tc.scale)
				}
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := mat.NewSymDense(50, nil)
	for i := 0; i < 50; i++ {
		a.SetSym(i, i, float64(i))
	}
	if _, _, _, err := eigenSym(ctx, a, true); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v", err)
	}
}
