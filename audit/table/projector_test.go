package table

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestProjectorRows checks the blocked projections U v against one dot
// product per coordinate, on shapes with every edge: a rank that is not a
// multiple of the kernel's four rows, P not a multiple of the panel, and
// more vectors than one chunk (the last chunk partial).
func TestProjectorRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, sz := range []struct{ k, P, n int }{{1, 3, 1}, {7, 300, 5}, {13, 2*projectPanel + 17, projectChunk + 9}, {40, 600, 2 * projectChunk}} {
		U := randVec(r, sz.k*sz.P)
		vecs := make([][]float64, sz.n)
		for i := range vecs {
			vecs[i] = randVec(r, sz.P)
		}
		got := NewProjector(U, sz.P).Rows(vecs, nil)
		if len(got) != sz.n {
			t.Fatalf("k=%d P=%d n=%d: %d rows", sz.k, sz.P, sz.n, len(got))
		}
		for j, v := range vecs {
			if len(got[j]) != sz.k {
				t.Fatalf("k=%d P=%d n=%d: row %d has %d coordinates", sz.k, sz.P, sz.n, j, len(got[j]))
			}
			for i := range sz.k {
				want, scale := 0.0, 0.0
				for p, x := range U[i*sz.P : (i+1)*sz.P] {
					want += x * v[p]
					scale += math.Abs(x * v[p])
				}
				if d := math.Abs(got[j][i] - want); d > 1e-14*scale {
					t.Errorf("k=%d P=%d n=%d: (U v_%d)_%d = %.17g, want %.17g", sz.k, sz.P, sz.n, j, i, got[j][i], want)
				}
			}
		}
	}
}
