package hvp

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// exactMethod is Exact: the dense curvature, one eigendecomposition, and
// solves as two matrix products over all right-hand sides.
type exactMethod struct{}

func (exactMethod) String() string { return "exact" }

// eigFactor is the exact method's factor: C = V diag(vals) V^T.
type eigFactor struct {
	P    int
	vals []float64
	inv  []float64 // 1 / (vals + lambda)
	vecs []float64 // V, row-major P×P
	c    []float64 // C, row-major, for residuals
	lam  float64
}

func (f *eigFactor) Dim() int { return f.P }

func (f *eigFactor) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.solveAll(ctx, x, b, nil)
}

func (exactMethod) factorize(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (factor, error) {
	P := o.numParams()
	c, err := o.dense(ctx, opt.Curvature, theta, opt.Progress)
	if err != nil {
		return nil, err
	}
	rep.Trace = mat.Trace(c)
	rep.setDamping(P)
	var vals, vecs []float64
	ok, err := interruptible(ctx, func() bool {
		w, v, ok, err := eigenSym(ctx, c, true)
		vals, vecs = w, v
		return ok && err == nil
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("hvp: eigendecomposition of the %d×%d %s failed", P, P, opt.Curvature)
	}
	rep.MinEig, rep.MaxEig = vals[0], vals[len(vals)-1]
	lam := rep.Lambda
	for _, v := range vals {
		if v < -lam {
			rep.NegativeEigs++
		}
	}
	inv := make([]float64, P)
	for i, v := range vals {
		d := v + lam
		if d == 0 {
			return nil, errs.Fix([]Option{OptDamping}, "%w: eigenvalue %.4g + lambda is exactly 0", ErrIndefinite, v)
		}
		inv[i] = 1 / d
	}
	full := make([]float64, P*P)
	for i := 0; i < P; i++ {
		for k := 0; k < P; k++ {
			full[i*P+k] = c.At(i, k)
		}
	}
	return &eigFactor{P: P, vals: vals, inv: inv, vecs: vecs, c: full, lam: lam}, nil
}

func (f *eigFactor) solveAll(ctx context.Context, x, rhs [][]float64, rep *Report) error {
	P := f.P
	if err := checkSolveArgs(P, x, rhs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// X = V diag(inv) V^T B, as two matrix products over all columns,
	// done transposed (one right-hand side per row): X^T = B^T V diag(inv) V^T.
	n := len(rhs)
	if n == 0 {
		return nil
	}
	bt := make([]float64, n*P)
	for j, col := range rhs {
		copy(bt[j*P:], col)
	}
	tt := make([]float64, n*P)
	graph.MatMul(false, false, n, P, P, bt, f.vecs, tt)
	for j := 0; j < n; j++ {
		row := tt[j*P : (j+1)*P]
		for i := range row {
			row[i] *= f.inv[i]
		}
	}
	xt := make([]float64, n*P)
	graph.MatMul(false, true, n, P, P, tt, f.vecs, xt)
	for j := range x {
		if x[j] == nil {
			x[j] = xt[j*P : (j+1)*P : (j+1)*P]
		} else {
			copy(x[j], xt[j*P:(j+1)*P])
		}
	}
	if rep == nil {
		return nil
	}
	// Residuals against the dense matrix, (C + lambda I) X - B, as one
	// more product over all columns.
	rt := tt // reused
	graph.MatMul(false, false, n, P, P, xt, f.c, rt)
	rep.Iterations = make([]int, n)
	rep.Residuals = make([]float64, n)
	for j := range x {
		res := 0.0
		for i, r := range rt[j*P : (j+1)*P] {
			d := r + f.lam*x[j][i] - rhs[j][i]
			res += d * d
		}
		rep.Residuals[j] = math.Sqrt(res) / math.Max(norm(rhs[j]), math.SmallestNonzeroFloat64)
	}
	return nil
}
