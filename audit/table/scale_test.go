package table

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/onnx"
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
			sh[b] = num.Dot(row, d.delta[b])
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
			num.AddScaled(w, -c, top.U[i*P:(i+1)*P])
		}
		return num.Norm(w)
	}
	gauss := &ShiftBasis{P: P, U: top.U, Sketch: gaussianSketch(P, ks, 3)}
	check("Gaussian sketch", d.reconstruct(t, gauss), func(i, b int) float64 {
		return 4 * perp(d.jx[i]) * perp(d.delta[b]) / math.Sqrt(ks)
	})
	if bad, _ := mismatches(d.reconstruct(t, top), exact); bad == 0 {
		t.Error("dropping the complement reproduced the exact shifts: the check cannot fail")
	}
}

// TestFinalizeLimitsStreamsExactly: FinalizeLimits on chunks of test
// points gives the same limits, bit for bit, as jackknifePlus on all
// blocks × points at once from shifts computed entry by entry, and the
// same coverage counts as checking each level's limits against the
// target. Integer coefficients make every shift exact whatever the order
// of summation. Some residuals are absent (NaN: the block is left out at
// that forecast slot) or unbounded (+Inf); some points leave out a block
// (a self-audit), have no forecast slot, or no target.
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
		pts[i] = PointRecord{F: float64(r.IntN(9)), Forecast: r.IntN(F), Skip: -1, G: ints(k), H: ints(ks)}
		switch r.IntN(6) {
		case 0:
			pts[i].Skip = r.IntN(nb)
		case 1:
			pts[i].Forecast = -1
		}
		if r.IntN(4) != 0 {
			pts[i].Y, pts[i].Labelled = float64(r.IntN(13)-2), true
		}
	}
	alphas := []float64{0.05, 0.1, 0.3, 0.5}
	wantCovered := make([]int, len(alphas))
	gotCovered := make([]int, len(alphas))
	wantLabelled, gotLabelled := 0, 0
	tab, err := CombineBlocks(recs)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < nx; lo += chunk {
		hi := min(lo+chunk, nx)
		got, err := FinalizeLimits(alpha, alphas, &tab, pts[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		gl, gu, gm := got.Lo, got.Up, got.M
		for a, c := range got.Covered {
			gotCovered[a] += c
		}
		gotLabelled += got.Labelled
		for i := lo; i < hi; i++ {
			p := pts[i]
			var vm, vp []float64
			for b, rec := range recs {
				if p.Forecast < 0 || b == p.Skip {
					continue
				}
				res := rec.Res[p.Forecast]
				if math.IsNaN(res) {
					continue
				}
				sh := num.Dot(p.G, rec.A) + num.Dot(p.H, rec.S)
				vm, vp = append(vm, p.F+sh-res), append(vp, p.F+sh+res)
			}
			if p.Labelled {
				wantLabelled++
				for a, al := range alphas {
					l, u := interval.JackknifePlus(al, slices.Clone(vm), slices.Clone(vp))
					if l <= p.Y && p.Y <= u {
						wantCovered[a]++
					}
				}
			}
			wl, wu := interval.JackknifePlus(alpha, vm, vp)
			if gl[i-lo] != wl || gu[i-lo] != wu || gm[i-lo] != len(vp) {
				t.Errorf("point %d: limits [%v, %v] from %d blocks, all at once [%v, %v] from %d", i, gl[i-lo], gu[i-lo], gm[i-lo], wl, wu, len(vp))
			}
		}
	}
	if gotLabelled != wantLabelled || !slices.Equal(gotCovered, wantCovered) {
		t.Errorf("covered %v of %d labelled points, by each level's limits %v of %d", gotCovered, gotLabelled, wantCovered, wantLabelled)
	}
	if wantLabelled == 0 || slices.Max(wantCovered) == 0 || slices.Min(wantCovered) == wantLabelled {
		t.Errorf("coverage counts %v of %d: the check cannot tell the levels apart", wantCovered, wantLabelled)
	}
	// Mismatched records are refused.
	recs[3].S = recs[3].S[:1]
	if _, err := CombineBlocks(recs); err == nil {
		t.Error("CombineBlocks accepted records of different sizes")
	}
}

// synthetic reads examples/synthetic's CSV file name (columns id,t,x,y,
// sequences of 10 steps in order) into inputs [n,10,1] and targets.
func synthetic(t *testing.T, name string) (x, y []float64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "synthetic", name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
	for i, l := range lines {
		f := strings.Split(l, ",")
		if step, _ := strconv.Atoi(f[1]); step != i%10+1 {
			t.Fatalf("%s line %d: step %s, want %d", name, i+2, f[1], i%10+1)
		}
		xv, err1 := strconv.ParseFloat(f[2], 64)
		yv, err2 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s line %d: %v %v", name, i+2, err1, err2)
		}
		x, y = append(x, xv), append(y, yv)
	}
	return x, y
}

// syntheticObjective is examples/synthetic's model on the sequences x, y
// in batches of 100 that say where their examples are, with ridge 10.
func syntheticObjective(t *testing.T, g *graph.Graph, x, y []float64) *hvp.Objective {
	t.Helper()
	const T, c = 10, 100
	n := len(y) / T
	o := &hvp.Objective{Ridge: 10}
	var p *graph.Program
	for lo := 0; lo < n; lo += c {
		in := graph.NewFloat([]int{c, T, 1}, x[lo*T:(lo+c)*T])
		if p == nil {
			var err error
			if p, err = g.Compile([]*graph.Tensor{in}); err != nil {
				t.Fatal(err)
			}
		}
		w := make([]float64, c*T)
		for i := range w {
			w[i] = 1
		}
		o.Batches = append(o.Batches, hvp.Batch{Program: p, Inputs: []*graph.Tensor{in}, Target: y[lo*T : (lo+c)*T], Weight: w, ExampleAxes: []int{0}})
	}
	return o
}

// jacobianByStep returns the output-Jacobian rows of every sequence and
// step of o, [seq*10+t], and the outputs: one Job.Outputs pass per step.
func jacobianByStep(t *testing.T, o *hvp.Objective, theta []float64) (rows [][]float64, f []float64) {
	t.Helper()
	ctx := context.Background()
	const T = 10
	nb := len(o.Batches)
	c := len(o.Batches[0].Target) / T
	rows = make([][]float64, nb*c*T)
	for step := 0; step < T; step++ {
		jobs := make([]hvp.Job, nb)
		out := make([][][]float64, nb)
		for b := range jobs {
			w := make([]float64, c*T)
			for s := 0; s < c; s++ {
				w[s*T+step] = 1
			}
			jobs[b] = hvp.Job{Batch: b, Weight: w, Outputs: true}
			out[b] = make([][]float64, c)
		}
		if err := o.PerExampleGradients(ctx, theta, jobs, out, nil); err != nil {
			t.Fatal(err)
		}
		for b := range out {
			for s, g := range out[b] {
				rows[(b*c+s)*T+step] = g
			}
		}
	}
	for _, b := range o.Batches {
		outs, err := b.Program.NewState().Forward(theta, b.Inputs)
		if err != nil {
			t.Fatal(err)
		}
		f = append(f, outs[b.Output].F...)
	}
	return rows, f
}

// inverse applies an approximation of (C + lambda I)^-1 to many vectors.
type inverse func(x, b [][]float64)

// newtonSteps returns every block's Newton leave-one-out step under A
// (docs/design.md, section 4.5; newtonCorrection's formula, in plain form: all
// sequences are blocks, squared error, weights 1) or, with newton false,
// the infinitesimal step A g_b, and the own leave-out residuals
// |y - f - J_b delta_b| per step.
func newtonSteps(A inverse, grads, jrows [][]float64, f, y []float64, newton bool) (delta, res [][]float64, lev levStats) {
	const T = 10
	n := len(grads)
	delta = make([][]float64, n)
	A(delta, grads)
	res = make([][]float64, n)
	var ajr [][]float64
	if newton {
		ajr = make([][]float64, len(jrows))
		A(ajr, jrows)
	}
	for b := 0; b < n; b++ {
		jb := jrows[b*T : (b+1)*T]
		u := delta[b]
		v := make([]float64, T)
		for a := range v {
			v[a] = num.Dot(jb[a], u)
		}
		jd := append([]float64(nil), v...)
		if newton {
			ajb := ajr[b*T : (b+1)*T]
			// S = Lambda^1/2 J A J^T Lambda^1/2 with Lambda = 2 I.
			s := mat.NewSymDense(T, nil)
			for a := 0; a < T; a++ {
				for c := a; c < T; c++ {
					s.SetSym(a, c, 2*(num.Dot(jb[a], ajb[c])+num.Dot(jb[c], ajb[a]))/2)
				}
			}
			for a := 0; a < T; a++ {
				lev.mean += s.At(a, a) / float64(len(jrows))
				lev.max = math.Max(lev.max, s.At(a, a))
			}
			// z = Lambda^1/2 (I - S)^-1 Lambda^1/2 v.
			ims := mat.NewDense(T, T, nil)
			for a := 0; a < T; a++ {
				for c := 0; c < T; c++ {
					ims.Set(a, c, -s.At(a, c))
				}
				ims.Set(a, a, 1+ims.At(a, a))
			}
			var zv mat.VecDense
			rhs := make([]float64, T)
			for a := range rhs {
				rhs[a] = 2 * v[a]
			}
			if err := zv.SolveVec(ims, mat.NewVecDense(T, rhs)); err != nil {
				panic(err)
			}
			z := zv.RawVector().Data
			d := append([]float64(nil), u...)
			for c := 0; c < T; c++ {
				num.AddScaled(d, z[c], ajb[c])
			}
			delta[b] = d
			for a := range jd {
				jd[a] = num.Dot(jb[a], d)
			}
		}
		res[b] = make([]float64, T)
		for a := range jd {
			res[b][a] = math.Abs(y[b*T+a] - f[b*T+a] - jd[a])
		}
	}
	return delta, res, lev
}

// levStats are the mean and largest own leverage S_aa over all terms.
type levStats struct{ mean, max float64 }

// scaleLimits runs the scalable path's map, combine and finalize on the
// steps and residuals, in basis s, for the test points (rows, outputs).
func scaleLimits(t *testing.T, s *ShiftBasis, delta, res, jx [][]float64, fx []float64) (lo, up []float64) {
	t.Helper()
	const T = 10
	recs := make([]BlockRecord, len(delta))
	for b := range delta {
		var err error
		if recs[b], err = MapBlock(s, delta[b], res[b]); err != nil {
			t.Fatal(err)
		}
	}
	tab, err := CombineBlocks(recs)
	if err != nil {
		t.Fatal(err)
	}
	fc := make([]int, len(jx))
	for i := range fc {
		fc[i] = i % T
	}
	pts, err := MapPoints(s, jx, fx, fc)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 1000
	for c := 0; c < len(pts); c += chunk {
		out, err := FinalizeLimits(0.1, nil, &tab, pts[c:min(c+chunk, len(pts))])
		if err != nil {
			t.Fatal(err)
		}
		lo, up = append(lo, out.Lo...), append(up, out.Up...)
	}
	return lo, up
}

// compareLimits returns the max and mean |limit difference| / reference
// width (both limits) and the coverage of y by each set of limits.
func compareLimits(lo, up, rlo, rup, y []float64) (worst, mean, cov, rcov float64) {
	n := float64(len(y))
	for i := range y {
		w := rup[i] - rlo[i]
		for _, d := range []float64{math.Abs(lo[i] - rlo[i]), math.Abs(up[i] - rup[i])} {
			worst = math.Max(worst, d/w)
			mean += d / w / (2 * n)
		}
		if lo[i] <= y[i] && y[i] <= up[i] {
			cov += 1 / n
		}
		if rlo[i] <= y[i] && y[i] <= rup[i] {
			rcov += 1 / n
		}
	}
	return worst, mean, cov, rcov
}

// TestScaleMeasurePaper measures the acceptance figures of the large-scale path on
// examples/synthetic (481 parameters, 1000 training and 1000 test
// sequences, ridge 10, Gauss-Newton with the default damping): jackknife+
// limits from low-rank Newton steps and low-dimensional shifts against
// those from exact steps and exact shifts. MEASURE=paper, -v.
func TestScaleMeasurePaper(t *testing.T) {
	if os.Getenv("MEASURE") != "paper" {
		t.Skip("a measurement: MEASURE=paper go test ./audit/table -run TestScaleMeasurePaper -v")
	}
	ctx := context.Background()
	g, err := onnx.Load(filepath.Join("..", "examples", "synthetic", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	theta := g.Theta()
	P := len(theta)
	xtr, ytr := synthetic(t, "train.csv")
	xte, yte := synthetic(t, "test.csv")
	train := syntheticObjective(t, g, xtr, ytr)
	test := syntheticObjective(t, g, xte, yte)
	n := len(ytr) / 10
	grads := make([][]float64, 0, n)
	jobs := make([]hvp.Job, len(train.Batches))
	for b := range jobs {
		jobs[b] = hvp.Job{Batch: b}
	}
	out := make([][][]float64, len(jobs))
	for b := range out {
		out[b] = make([][]float64, 100)
	}
	if err := train.PerExampleGradients(ctx, theta, jobs, out, nil); err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		grads = append(grads, o...)
	}
	jtr, ftr := jacobianByStep(t, train, theta)
	jte, fte := jacobianByStep(t, test, theta)
	c, err := train.Dense(ctx, hvp.GaussNewton, theta)
	if err != nil {
		t.Fatal(err)
	}
	rho := hvp.DefaultDampingFor(hvp.GaussNewton, math.Inf(1))
	lam := rho * mat.Trace(c) / float64(P)
	a := mat.NewSymDense(P, nil)
	a.CopySym(c)
	for i := 0; i < P; i++ {
		a.SetSym(i, i, a.At(i, i)+lam)
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		t.Fatal("C + lambda I is not positive definite")
	}
	exact := func(x, b [][]float64) {
		for j, bj := range b {
			var v mat.VecDense
			if err := ch.SolveVecTo(&v, mat.NewVecDense(P, bj)); err != nil {
				t.Fatal(err)
			}
			x[j] = v.RawVector().Data
		}
	}
	identity := &ShiftBasis{P: P, U: make([]float64, P*P)}
	for i := 0; i < P; i++ {
		identity.U[i*P+i] = 1
	}
	dN, rN, lev := newtonSteps(exact, grads, jtr, ftr, ytr, true)
	t.Logf("own leverage (exact): mean %.4f, max %.4f", lev.mean, lev.max)
	rlo, rup := scaleLimits(t, identity, dN, rN, jte, fte)
	width := 0.0
	for i := range rlo {
		width += (rup[i] - rlo[i]) / float64(len(rlo))
	}
	report := func(name string, lo, up []float64) {
		worst, mean, cov, rcov := compareLimits(lo, up, rlo, rup, yte)
		t.Logf("%-58s |limit diff|/width max %.4f mean %.5f  coverage %.4f (exact %.4f, diff %+.2f points)", name, worst, mean, cov, rcov, 100*(cov-rcov))
	}
	t.Logf("P=%d n=%d test points=%d rho=%g lambda=%.4g mean exact width %.4f", P, n, len(yte), rho, lam, width)
	dI, rI, _ := newtonSteps(exact, grads, jtr, ftr, ytr, false)
	lo, up := scaleLimits(t, identity, dI, rI, jte, fte)
	report("exact infinitesimal (no leverage correction)", lo, up)
	zero := &ShiftBasis{P: P}
	lo, up = scaleLimits(t, zero, dN, rN, jte, fte)
	report("exact residuals, shifts dropped", lo, up)
	none := func(x, b [][]float64) {
		for j := range b {
			x[j] = make([]float64, P)
		}
	}
	d0, r0, _ := newtonSteps(none, grads, jtr, ftr, ytr, false)
	lo, up = scaleLimits(t, zero, d0, r0, jte, fte)
	report("in-sample residuals, no shifts", lo, up)

	ks := []int{20, 40, 80, 160, 320}
	if v := os.Getenv("RANKS"); v != "" {
		ks = ks[:0]
		for _, f := range strings.Split(v, ",") {
			k, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
	}
	for _, k := range ks {
		f, err := hvp.NewLowRank(ctx, train, theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: k, Damping: rho, Seed: 5, Probe: grads[:16]})
		if err != nil {
			t.Fatal(err)
		}
		lr := func(x, b [][]float64) {
			if err := f.SolveAll(ctx, x, b); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("k=%d: %d products, lambda %.4g, complement %.4g (mean %.4g), S_k/lambda %.3g", k, f.Products, f.Lambda, f.Complement, f.Rest, f.S[k-1]/f.Lambda)
		dL, rL, _ := newtonSteps(lr, grads, jtr, ftr, ytr, true)
		lo, up := scaleLimits(t, identity, dL, rL, jte, fte)
		report(fmt.Sprintf("k=%d low-rank Newton, exact shifts", k), lo, up)
		// The complement constant that makes the probes' complement
		// parts b' solve right on average in the inverse: Complement +
		// lambda = sum |b'|^2 / sum b'^T (C + lambda I)^-1 b' (16 solves,
		// CG in practice; exact here), once with block gradients and once
		// with their output-Jacobian rows as probes.
		for _, pr := range []struct {
			name  string
			probe [][]float64
		}{{"gradient", grads[:16]}, {"Jacobian-row", jtr[:160]}} {
			top := &ShiftBasis{P: P, U: f.U}
			nu, den := 0.0, 0.0
			sol := make([][]float64, len(pr.probe))
			perp := make([][]float64, len(pr.probe))
			for j, b := range pr.probe {
				a, _ := top.project(b)
				w := append([]float64(nil), b...)
				for i, c := range a {
					num.AddScaled(w, -c, f.U[i*P:(i+1)*P])
				}
				perp[j] = w
			}
			exact(sol, perp)
			for j := range perp {
				nu += num.Dot(perp[j], perp[j])
				den += num.Dot(perp[j], sol[j])
			}
			h := *f
			h.Complement = nu/den - h.Lambda
			hs := func(x, b [][]float64) {
				if err := h.SolveAll(ctx, x, b); err != nil {
					t.Fatal(err)
				}
			}
			dH, rH, _ := newtonSteps(hs, grads, jtr, ftr, ytr, true)
			lo, up := scaleLimits(t, identity, dH, rH, jte, fte)
			report(fmt.Sprintf("k=%d low-rank Newton, inverse-%s complement %.4g", k, pr.name, h.Complement), lo, up)
		}
		// The same with the constant chosen by hvp (InverseProbe: CG).
		fi, err := hvp.NewLowRank(ctx, train, theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: k, Damping: rho, Seed: 5, InverseProbe: jtr[:160]})
		if err != nil {
			t.Fatal(err)
		}
		li := func(x, b [][]float64) {
			if err := fi.SolveAll(ctx, x, b); err != nil {
				t.Fatal(err)
			}
		}
		dL, rL, _ = newtonSteps(li, grads, jtr, ftr, ytr, true)
		lo, up = scaleLimits(t, identity, dL, rL, jte, fte)
		report(fmt.Sprintf("k=%d InverseProbe (%d products, c %.4g), exact shifts", k, fi.Products, fi.Complement), lo, up)
		dLI, rLI, _ := newtonSteps(li, grads, jtr, ftr, ytr, false)
		lo, up = scaleLimits(t, identity, dLI, rLI, jte, fte)
		report(fmt.Sprintf("k=%d InverseProbe, infinitesimal, exact shifts", k), lo, up)
		for _, ks := range []int{50} {
			s := &ShiftBasis{P: P, U: fi.U, Sketch: gaussianSketch(P, ks, 9)}
			lo, up = scaleLimits(t, s, dL, rL, jte, fte)
			report(fmt.Sprintf("k=%d InverseProbe, Gaussian sketch k'=%d", k, ks), lo, up)
			s = &ShiftBasis{P: P, U: fi.U, Sketch: testSubspace(fi.U, jte, P, ks)}
			lo, up = scaleLimits(t, s, dL, rL, jte, fte)
			report(fmt.Sprintf("k=%d InverseProbe, test-Jacobian subspace k'=%d", k, ks), lo, up)
		}
		s := &ShiftBasis{P: P, U: fi.U}
		lo, up = scaleLimits(t, s, dL, rL, jte, fte)
		report(fmt.Sprintf("k=%d InverseProbe, complement dropped", k), lo, up)
	}
}

// testSubspace returns the top ks right singular vectors (rows) of the
// test Jacobian rows' parts orthogonal to the rows of u: the orthonormal
// sketch that keeps the complement directions test predictions see most.
func testSubspace(u []float64, jx [][]float64, P, ks int) []float64 {
	top := &ShiftBasis{P: P, U: u}
	k := top.K()
	m := mat.NewSymDense(P, nil)
	for _, row := range jx {
		a, _ := top.project(row)
		w := append([]float64(nil), row...)
		for i, c := range a {
			num.AddScaled(w, -c, u[i*P:(i+1)*P])
		}
		m.SymRankOne(m, 1, mat.NewVecDense(P, w))
	}
	var eig mat.EigenSym
	if !eig.Factorize(m, true) {
		panic("eigendecomposition failed")
	}
	var v mat.Dense
	eig.VectorsTo(&v)
	ks = min(ks, P-k)
	out := make([]float64, ks*P)
	for i := 0; i < ks; i++ {
		for j := 0; j < P; j++ {
			out[i*P+j] = v.At(j, P-1-i)
		}
	}
	return out
}
