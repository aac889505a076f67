package audit

import (
	"context"
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/graph"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// TestRefineBlocks: on a small GRU with few sequences (high leverage) a
// rank-2 factor overestimates the inverse curvature on its complement
// and leaves blocks unbounded, which the dense exact inverse does not;
// refineBlocks re-solves every suspicious block and recovers, per block,
// the largest leverage eigenvalue and the leverage diagonal of the dense
// reference Lambda^1/2 J_b (C + lambda I)^-1 J_b^T Lambda^1/2 (Cholesky
// of the dense curvature with the factor's lambda), and the Newton step
// (C + lambda I - C_b)^-1 g_b, C_b = J_b^T Lambda_b J_b.
func TestRefineBlocks(t *testing.T) {
	ctx := context.Background()
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 12, 0, 5, 8, 31)
	o, err := (&Options{Layout: graph.BatchFirst, Curvature: hvp.GaussNewton, Ridge: 0.05, Estimator: Newton, Workers: 2}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p, err := prepare(o, g, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	P := len(p.theta)
	whole := p.objective(p.groups)
	f, err := hvp.NewLowRank(ctx, whole, p.theta, &hvp.LowRankOptions{Curvature: hvp.GaussNewton, Rank: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	terms, err := p.ownTerms()
	if err != nil {
		t.Fatal(err)
	}
	basis := &table.ShiftBasis{P: P, U: f.U}
	lr := &lowRankPass{p: p, f: f, basis: basis, terms: terms, slots: forecastSlots(p), curv: p.groups}
	bp, err := lr.blockPass(ctx, true, true)
	if err != nil {
		t.Fatal(err)
	}
	nb := len(p.scheme.Blocks)
	low := 0
	for k := range bp.unbounded {
		if bp.unbounded[k] {
			low++
		}
	}

	// The dense reference: A = (C + lambda I)^-1 by Cholesky.
	c, err := whole.Dense(ctx, hvp.GaussNewton, p.theta)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < P; i++ {
		c.SetSym(i, i, c.At(i, i)+f.Lambda)
	}
	var ch mat.Cholesky
	if !ch.Factorize(c) {
		t.Fatal("C + lambda I is not positive definite")
	}
	ks := make([]int, nb)
	for k := range ks {
		ks[k] = k
	}
	grads, rows, err := blockRows(ctx, p, ks)
	if err != nil {
		t.Fatal(err)
	}
	wantMax := make([]float64, nb)
	wantLev := make([][]float64, nb)
	wantDelta := make([][]float64, nb)
	for k, b := range p.scheme.Blocks {
		ts := terms[b.Seq]
		m := len(ts)
		jt := mat.NewDense(P, m, nil)
		sl := make([]float64, m)
		for a, tm := range ts {
			sl[a] = math.Sqrt(tm.w * p.opt.Loss.SecondDerivative(tm.y, tm.fx))
			for i, v := range rows[k][tm.forcast] {
				jt.Set(i, a, sl[a]*v)
			}
		}
		var aj mat.Dense
		if err := ch.SolveTo(&aj, jt); err != nil {
			t.Fatal(err)
		}
		var s mat.Dense
		s.Mul(jt.T(), &aj)
		ss := mat.NewSymDense(m, nil)
		for a := 0; a < m; a++ {
			for e := a; e < m; e++ {
				ss.SetSym(a, e, (s.At(a, e)+s.At(e, a))/2)
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(ss, false) {
			t.Fatal("eigendecomposition failed")
		}
		vals := eig.Values(nil)
		wantMax[k] = vals[m-1]
		for a := 0; a < m; a++ {
			wantLev[k] = append(wantLev[k], ss.At(a, a))
		}
		// Newton step: (C + lambda I - J^T Lambda J) delta = g_b.
		lb := mat.NewSymDense(P, nil)
		lb.CopySym(c)
		for a := 0; a < m; a++ {
			lb.SymRankOne(lb, -1, mat.NewVecDense(P, mat.Col(nil, a, jt)))
		}
		var lu mat.LU
		lu.Factorize(lb)
		var d mat.VecDense
		if err := lu.SolveVecTo(&d, false, mat.NewVecDense(P, grads[k])); err != nil {
			t.Fatal(err)
		}
		wantDelta[k] = d.RawVector().Data
	}
	exactUnbounded := 0
	for k := range wantMax {
		if wantMax[k] > 1-leverageLimit {
			exactUnbounded++
		}
	}
	t.Logf("%d blocks, P %d: unbounded %d at rank 2, %d with the exact inverse", nb, P, low, exactUnbounded)
	if low == 0 || exactUnbounded > 0 {
		t.Fatalf("the fixture does not show the problem: %d blocks unbounded at rank 2, %d exactly", low, exactUnbounded)
	}

	cand := make([]bool, nb)
	for k := range cand {
		cand[k] = bp.suspicious(k)
	}
	rf, err := lr.refineBlocks(ctx, train.Len(), bp)
	if err != nil {
		t.Fatal(err)
	}
	if rf.blocks < low || rf.skipped != 0 || rf.products == 0 || rf.residual > refineTol {
		t.Fatalf("refined %d blocks (%d unbounded before), %d skipped, %d products, residual %.3g", rf.blocks, low, rf.skipped, rf.products, rf.residual)
	}
	compared, worst := 0, 0.0
	for k := range bp.levMax {
		if bp.unbounded[k] {
			t.Errorf("block %d still unbounded (largest leverage %.6f, exact %.6f)", k, bp.levMax[k], wantMax[k])
			continue
		}
		if !cand[k] {
			continue // not refined: the low-rank value stays
		}
		compared++
		worst = math.Max(worst, math.Abs(bp.levMax[k]-wantMax[k]))
		if math.Abs(bp.levMax[k]-wantMax[k]) > 1e-3 {
			t.Errorf("block %d: largest leverage %.6f, exact %.6f", k, bp.levMax[k], wantMax[k])
		}
		for a, v := range bp.lev[k] {
			if math.Abs(v-wantLev[k][a]) > 1e-3 {
				t.Errorf("block %d term %d: leverage %.6f, exact %.6f", k, a, v, wantLev[k][a])
			}
		}
		// The step itself is not kept: its norm and its record.
		want, err := table.MapBlock(basis, wantDelta[k], nil)
		if err != nil {
			t.Fatal(err)
		}
		wn := num.Norm(wantDelta[k])
		if math.Abs(bp.norms[k]-wn) > 1e-3*wn {
			t.Errorf("block %d: |Newton step| %.6g, exact %.6g", k, bp.norms[k], wn)
		}
		for i, v := range bp.recs[k].A {
			if math.Abs(v-want.A[i]) > 1e-3*wn {
				t.Errorf("block %d: U delta[%d] = %.6g, exact %.6g", k, i, v, want.A[i])
			}
		}
	}
	t.Logf("%d blocks refined in %d products; largest leverage within %.2g of the exact one", rf.blocks, rf.products, worst)
	if compared < low {
		t.Errorf("%d refined blocks compared, %d were unbounded", compared, low)
	}
}
