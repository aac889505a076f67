package hvp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRotateRowsInPlace checks the panel-by-panel product that forms a
// large factor's rows in place of its Lanczos vectors against the
// product written out by hand, on a width that is not a multiple of the
// panel.
func TestRotateRowsInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	k, P := 7, 2*rotatePanel+37
	zt := make([]float64, k*k)
	q := make([]float64, k*P)
	for i := range zt {
		zt[i] = r.NormFloat64()
	}
	for i := range q {
		q[i] = r.NormFloat64()
	}
	want := make([]float64, k*P)
	for i := 0; i < k; i++ {
		for j := 0; j < P; j++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s += zt[i*k+l] * q[l*P+j]
			}
			want[i*P+j] = s
		}
	}
	out := rotateRows(zt, append([]float64(nil), q...), k, P, false)
	in := rotateRows(zt, q, k, P, true)
	if &in[0] != &q[0] {
		t.Fatal("the in-place product did not write over the Lanczos vectors")
	}
	for i := range want {
		for _, got := range []float64{out[i], in[i]} {
			if math.Abs(got-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("entry %d: %g, want %g", i, got, want[i])
			}
		}
	}
}
