package audit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// denseProblem is a random least-squares curvature with known answers:
// C = J^T J (J m×P Gaussian), block gradients g_b, test Jacobian rows
// jx, the exact steps delta_b = (C + lambda I)^-1 g_b by Cholesky and the
// exact shifts jx_i · delta_b; eigvec holds C's eigenvectors as rows, in
// decreasing eigenvalue order.
type denseProblem struct {
	P      int
	delta  [][]float64
	jx     [][]float64
	shift  [][]float64 // [point][block]
	eigvec []float64
}

func newDenseProblem(t *testing.T, P, m, nb, nx int, lambda float64, seed uint64) *denseProblem {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	gauss := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		return v
	}
	j := mat.NewDense(m, P, gauss(m*P))
	c := mat.NewSymDense(P, nil)
	c.SymOuterK(1, j.T())
	a := mat.NewSymDense(P, nil)
	a.CopySym(c)
	for i := 0; i < P; i++ {
		a.SetSym(i, i, a.At(i, i)+lambda)
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		t.Fatal("C + lambda I is not positive definite")
	}
	d := &denseProblem{P: P}
	for b := 0; b < nb; b++ {
		var x mat.VecDense
		if err := ch.SolveVecTo(&x, mat.NewVecDense(P, gauss(P))); err != nil {
			t.Fatal(err)
		}
		d.delta = append(d.delta, x.RawVector().Data)
	}
	for i := 0; i < nx; i++ {
		row := gauss(P)
		d.jx = append(d.jx, row)
		sh := make([]float64, nb)
		for b := range sh {
			sh[b] = dotv(row, d.delta[b])
		}
		d.shift = append(d.shift, sh)
	}
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		t.Fatal("eigendecomposition failed")
	}
	var v mat.Dense
	eig.VectorsTo(&v) // columns, increasing eigenvalues
	d.eigvec = make([]float64, P*P)
	for i := 0; i < P; i++ {
		for k := 0; k < P; k++ {
			d.eigvec[i*P+k] = v.At(k, P-1-i)
		}
	}
	return d
}

// reconstruct maps every block and point through basis s and returns the
// low-dimensional shifts [point][block].
func (d *denseProblem) reconstruct(t *testing.T, s *ShiftBasis) [][]float64 {
	t.Helper()
	recs := make([]BlockRecord, len(d.delta))
	for b, delta := range d.delta {
		var err error
		if recs[b], err = MapBlock(s, delta, []float64{1}); err != nil {
			t.Fatal(err)
		}
	}
	tab, err := CombineBlocks(recs)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := MapPoints(s, d.jx, make([]float64, len(d.jx)), make([]int, len(d.jx)))
	if err != nil {
		t.Fatal(err)
	}
	flat, err := tab.Shifts(pts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(pts))
	for i := range out {
		out[i] = flat[i*tab.N : (i+1)*tab.N]
	}
	return out
}

// TestScaleShiftsMatchDense: the low-dimensional shifts G_x·A_b + H_x·S_b
// equal the exact J_x (C + lambda I)^-1 g_b of a dense random problem
// when k = P, when the sketch is an orthonormal basis of the complement
// (the remaining eigenvectors), and when k = 0 with that basis as sketch;
// with a Gaussian sketch of k' rows each shift is within 4 standard
// deviations |J_x^perp||delta_b^perp|/sqrt(k') of the exact one, and
// dropping the complement is far from it (the test can fail).
func TestScaleShiftsMatchDense(t *testing.T) {
	const P, m, nb, nx, k = 24, 40, 30, 20, 8
	d := newDenseProblem(t, P, m, nb, nx, 0.5, 7)
	// mismatches counts the shifts farther than tol from the exact ones.
	mismatches := func(got [][]float64, tol func(i, b int) float64) (bad int, first string) {
		for i := range got {
			for b, v := range got[i] {
				if e := math.Abs(v - d.shift[i][b]); e > tol(i, b) {
					if bad == 0 {
						first = fmt.Sprintf("point %d block %d: shift %.12g, exact %.12g", i, b, v, d.shift[i][b])
					}
					bad++
				}
			}
		}
		return bad, first
	}
	check := func(name string, got [][]float64, tol func(i, b int) float64) {
		if bad, first := mismatches(got, tol); bad > 0 {
			t.Errorf("%s: %d of %d shifts differ; %s", name, bad, nx*nb, first)
		}
	}
	scale := 0.0
	for i := range d.shift {
		for _, v := range d.shift[i] {
			scale = math.Max(scale, math.Abs(v))
		}
	}
	exact := func(int, int) float64 { return 1e-12 * scale }
	check("k = P", d.reconstruct(t, &ShiftBasis{P: P, U: d.eigvec}), exact)
	check("orthonormal complement", d.reconstruct(t, &ShiftBasis{P: P, U: d.eigvec[:k*P], Sketch: d.eigvec[k*P:]}), exact)
	check("k = 0, identity sketch", d.reconstruct(t, &ShiftBasis{P: P, Sketch: d.eigvec}), exact)

	const ks = 2000
	top := &ShiftBasis{P: P, U: d.eigvec[:k*P]}
	perp := func(v []float64) float64 {
		a, _ := top.project(v)
		w := append([]float64(nil), v...)
		for i, c := range a {
			addTo(w, top.U[i*P:(i+1)*P], -c)
		}
		return norm(w)
	}
	gauss := &ShiftBasis{P: P, U: top.U, Sketch: GaussianSketch(P, ks, 3)}
	check("Gaussian sketch", d.reconstruct(t, gauss), func(i, b int) float64 {
		return 4 * perp(d.jx[i]) * perp(d.delta[b]) / math.Sqrt(ks)
	})
	if bad, _ := mismatches(d.reconstruct(t, top), exact); bad == 0 {
		t.Error("dropping the complement reproduced the exact shifts: the check cannot fail")
	}
}

// TestFinalizeLimitsStreamsExactly: FinalizeLimits on chunks of test
// points gives the same limits, bit for bit, as jackknifePlus on all
// blocks × points at once from shifts computed entry by entry. Integer
// coefficients make every shift exact whatever the order of summation.
// Some residuals are absent (NaN: the block is left out at that forecast
// position) or unbounded (+Inf).
func TestFinalizeLimitsStreamsExactly(t *testing.T) {
	const nb, nx, k, ks, F, chunk = 57, 41, 5, 3, 4, 7
	const alpha = 0.1
	r := rand.New(rand.NewPCG(11, 2))
	ints := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(11) - 5)
		}
		return v
	}
	recs := make([]BlockRecord, nb)
	for b := range recs {
		res := make([]float64, F)
		for f := range res {
			res[f] = float64(r.IntN(20)) / 4
			switch r.IntN(15) {
			case 0:
				res[f] = math.NaN()
			case 1:
				res[f] = math.Inf(1)
			}
		}
		recs[b] = BlockRecord{A: ints(k), S: ints(ks), Res: res}
	}
	pts := make([]PointRecord, nx)
	for i := range pts {
		pts[i] = PointRecord{F: float64(r.IntN(9)), Forecast: r.IntN(F), G: ints(k), H: ints(ks)}
	}
	tab, err := CombineBlocks(recs)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < nx; lo += chunk {
		hi := min(lo+chunk, nx)
		gl, gu, gm, err := FinalizeLimits(alpha, &tab, pts[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		for i := lo; i < hi; i++ {
			p := pts[i]
			var vm, vp []float64
			for _, rec := range recs {
				res := rec.Res[p.Forecast]
				if math.IsNaN(res) {
					continue
				}
				sh := dotv(p.G, rec.A) + dotv(p.H, rec.S)
				vm, vp = append(vm, p.F+sh-res), append(vp, p.F+sh+res)
			}
			wl, wu := jackknifePlus(alpha, vm, vp)
			if gl[i-lo] != wl || gu[i-lo] != wu || gm[i-lo] != len(vp) {
				t.Errorf("point %d: limits [%v, %v] from %d blocks, all at once [%v, %v] from %d", i, gl[i-lo], gu[i-lo], gm[i-lo], wl, wu, len(vp))
			}
		}
	}
	// Mismatched records are refused.
	recs[3].S = recs[3].S[:1]
	if _, err := CombineBlocks(recs); err == nil {
		t.Error("CombineBlocks accepted records of different sizes")
	}
}
