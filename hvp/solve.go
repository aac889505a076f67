package hvp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// Method is how Solve applies (C + lambda I)^-1.
type Method int

const (
	// Exact forms C densely, eigendecomposes it once and applies the
	// inverse to all right-hand sides as one matrix product. Best up to a
	// few thousand parameters.
	Exact Method = iota
	// CG solves C + lambda I by Krylov iterations, one solve per
	// right-hand side, with curvature-vector products only: conjugate
	// gradients for the Gauss-Newton matrix, MINRES (conjugate gradients'
	// counterpart for symmetric indefinite systems) for the Hessian.
	CG
	// LiSSA is the paper's stochastic recursion (DESIGN section 4) with
	// blockwise batch sampling.
	LiSSA
	// Dual is exact like Exact, for the Gauss-Newton curvature only,
	// through the N×N kernel of the N loss terms instead of the P×P
	// matrix (Woodbury's identity, see dual.go): the exact solver for
	// models with fewer loss terms than parameters (DualFits says when).
	// It holds the N×P weighted output Jacobian and the kernel's
	// Cholesky factor, 8 (N P + N^2) bytes (DualBytes: the peak while
	// factorising), and needs lambda + ridge > 0. Its factor's SolveAll
	// allows x[j] to be b[j].
	Dual
)

func (m Method) String() string {
	return [...]string{"exact", "cg", "lissa", "dual"}[m]
}

// Options configure Solve and Factorize. The zero value solves exactly
// with the Gauss-Newton curvature and its default damping.
type Options struct {
	Method    Method
	Curvature Curvature
	// Damping is rho in lambda = rho * trace(C) / P (DESIGN section 4):
	// damping relative to the mean eigenvalue. 0 means the default for
	// the curvature and the objective's ridge (DefaultDampingFor); use a negative value for no damping at
	// all.
	Damping float64

	// CG: stop when |(C + lambda I) x - b| <= Tol |b| (default 1e-10), or
	// after MaxIter iterations (default 10 P).
	Tol     float64
	MaxIter int
	// TraceSamples is the number of Hutchinson vectors estimating
	// trace(C) for CG and LiSSA (default 32).
	TraceSamples int

	// LiSSA: Depth recursion steps (default 1000), the iterates of the
	// second half averaged, and that averaged over Repeats independent
	// runs (default 1), each step using the curvature of
	// BatchSize sampled jobs (default 1) scaled to estimate the full C.
	// Scale is sigma, at least C's largest eigenvalue (0: estimated by
	// power iteration, times 1.1). Sample draws the jobs of one step; nil
	// samples batches uniformly. The recursion's own damping lambda_0 is
	// lambda / sigma, so that LiSSA solves the same damped system as the
	// other methods.
	Depth, Repeats, BatchSize int
	Scale                     float64
	Sample                    func(r *rand.Rand, size int) (jobs []Job, scale float64)

	// Seed makes the random choices (trace vectors, LiSSA samples)
	// reproducible.
	Seed uint64

	// Progress, when set, is called as the work advances: columns of the
	// dense curvature for Exact, right-hand sides for CG and LiSSA,
	// backward passes of the output Jacobian for Dual. It is
	// called from one goroutine at a time.
	Progress func(done, total int)
}

// DefaultDamping is rho for the Hessian when Options.Damping is 0 (the
// paper's setting, kept so that its results can be reproduced). The
// curvature of a recurrent model's summed loss has a few very large
// eigenvalues (output scale directions, 1e7 for the paper's RNN) that
// dominate its mean, so rho must be small for lambda to be small against
// the bulk of the spectrum: on the bundled synthetic study, rho = 0.01
// made influence steps 25-50 times too short (cosine 0.26 with exact
// re-training), while 1e-6 agrees with exact re-training (mean cosine
// 0.96, step lengths 0.8 to 1.0) and still keeps exactly singular
// directions well posed. With an indefinite Hessian no small damping is
// safe: use the Gauss-Newton curvature.
const DefaultDamping = 1e-6

// DefaultGaussNewtonDamping and DefaultRidgeGaussNewtonDamping are rho
// for the Gauss-Newton curvature when Options.Damping is 0, without and
// with a ridge (Objective.Ridge > 0): lambda = rho trace(C) / P. Chosen
// by measurement with the Newton leave-one-block-out estimator (mean
// interval width over the test-set oracle width, pooled coverage;
// the models of benchmarks/influence and examples/synthetic):
//
//	model (training)                    rho 1e-4       rho 1e-3       rho 1e-2
//	Adam RNN, n = 100, no ridge         1.42x  0.963   1.11x  0.925   0.99x  0.899
//	Adam LSTM, n = 300, no ridge        1.48x  0.938   1.15x  0.916   1.06x  0.904
//	Adam GRU + MLP, n = 300, no ridge   1.07x  0.915   1.01x  0.903   0.98x  0.895
//	Adam RNN, n = 1000, no ridge        1.02x  0.902   1.01x  0.900   1.00x  0.898
//	stationary RNN, n = 100, ridge 10   0.79x  0.843   0.69x  0.798   0.61x  0.755
//	model_small, n = 100, ridge 10      1.00x  0.893   0.98x  0.887
//	model, n = 1000, ridge 10           0.87x  0.865   0.85x  0.860
//
// A model trained without a ridge, usually by a stochastic optimiser and
// not to a stationary point, carries gradient along directions of tiny
// curvature that only lambda bounds: a small lambda amplifies it into
// wide intervals (1.4-1.5 times the oracle at 1e-4, 8 times at 1e-6), and
// 1e-3 is the smallest rho that keeps every width within 1.3 times the
// oracle. A model trained with a ridge r has curvature at least r in every
// direction and was fitted to a stationary point of the penalised loss:
// there damping only shortens the leave-one-out steps and lowers coverage
// where leverage is high (the stationary n = 100 model loses 4.5 points
// of coverage from 1e-4 to 1e-3, the paper-size one half a point), so the
// smaller 1e-4 is used, which keeps the paper-size intervals as they were
// with the Hessian (0.865).
const (
	DefaultGaussNewtonDamping      = 1e-3
	DefaultRidgeGaussNewtonDamping = 1e-4
)

// DefaultDampingFor is the default rho of curvature c for an objective
// with the given ridge: DefaultDamping for the Hessian,
// DefaultGaussNewtonDamping or, with a ridge, DefaultRidgeGaussNewtonDamping
// for the Gauss-Newton matrix.
func DefaultDampingFor(c Curvature, ridge float64) float64 {
	switch {
	case c == Hessian:
		return DefaultDamping
	case ridge > 0:
		return DefaultRidgeGaussNewtonDamping
	}
	return DefaultGaussNewtonDamping
}

// Report says what a Solve used and how well it converged.
type Report struct {
	Method    Method
	Curvature Curvature
	Rho       float64 // relative damping as given
	Lambda    float64 // absolute damping added to C
	Trace     float64 // trace(C): exact (Exact, Dual) or estimated
	TraceErr  float64 // standard error of the estimate; 0 when exact
	// MinEig and MaxEig are C's extreme eigenvalues (Exact, Dual; for
	// LiSSA MaxEig is the power-iteration estimate when Scale was 0).
	MinEig, MaxEig float64
	// Iterations and Residuals per right-hand side: the relative residual
	// |(C + lambda I) x - b| / |b| at the end (computed exactly for CG and
	// LiSSA with one extra curvature-vector product).
	Iterations []int
	Residuals  []float64
	// NegativeEigs counts C's eigenvalues below -lambda (Exact, Dual): where
	// it is positive the damped matrix is indefinite and the Newton step
	// is not a descent step in those directions. The exact solver still
	// applies (C + lambda I)^-1 as it is (its inverse flips the sign of
	// those directions, moving the parameters uphill); CG switches to
	// MINRES for the Hessian.
	NegativeEigs int
	// Unconverged counts the right-hand sides on which CG stopped at its
	// iteration cap above the tolerance Tol.
	Unconverged int
	Tol         float64
}

// ErrDiverged is returned when LiSSA's iterates grow without bound.
var ErrDiverged = errors.New("hvp: the LiSSA recursion diverged")

// ErrIndefinite is returned when C + lambda I is not positive definite
// where a method needs it (CG meets a direction of non-positive curvature).
var ErrIndefinite = errors.New("hvp: the damped curvature is not positive definite")

// Factor applies (C + lambda I)^-1, C the curvature of an objective at a
// point, to many vectors after one preparation (a factorisation for the
// exact method, the damping and scale for the iterative ones). The
// leave-one-block-out estimator of DESIGN section 8 needs nothing else of
// the curvature, so any approximation that can apply its inverse (a
// low-rank one, say) can stand in.
type Factor interface {
	// Dim is the number of parameters P.
	Dim() int
	// SolveAll sets x[j] = (C + lambda I)^-1 b[j] for every j (x[j] is
	// allocated when nil, overwritten otherwise; b is not modified).
	SolveAll(ctx context.Context, x, b [][]float64) error
}

// factor is a Factor that can also record, per right-hand side, its
// iterations and residuals in a report.
type factor interface {
	Factor
	solveAll(ctx context.Context, x, b [][]float64, rep *Report) error
}

// Factorize prepares (C + lambda I)^-1 for the curvature, damping and
// method of opt (DESIGN section 4), C that of o at theta. The report says
// what it found (trace, lambda, extreme eigenvalues, warnings); Solve
// adds per-right-hand-side figures to it.
func Factorize(ctx context.Context, o *Objective, theta []float64, opt *Options) (Factor, *Report, error) {
	f, rep, err := factorize(ctx, o, theta, opt)
	if err != nil {
		return nil, nil, err
	}
	return f, rep, nil
}

func factorize(ctx context.Context, o *Objective, theta []float64, opt *Options) (factor, *Report, error) {
	if opt == nil {
		opt = &Options{}
	}
	P := o.numParams()
	if err := checkLen("theta", theta, P); err != nil {
		return nil, nil, err
	}
	rho := opt.Damping
	if rho == 0 {
		rho = DefaultDampingFor(opt.Curvature, o.Ridge)
	}
	if rho < 0 {
		rho = 0
	}
	rep := &Report{Method: opt.Method, Curvature: opt.Curvature, Rho: rho, MinEig: math.NaN(), MaxEig: math.NaN()}
	var f factor
	var err error
	switch opt.Method {
	case Exact:
		f, err = factorExact(ctx, o, theta, opt, rep)
	case CG:
		f, err = factorCG(ctx, o, theta, opt, rep)
	case LiSSA:
		f, err = factorLiSSA(ctx, o, theta, opt, rep)
	case Dual:
		f, err = factorDual(ctx, o, theta, opt, rep)
	default:
		return nil, nil, fmt.Errorf("hvp: unknown method %d", opt.Method)
	}
	if err != nil {
		return nil, nil, err
	}
	return f, rep, nil
}

// Solve returns x_j = (C + lambda I)^-1 b_j for every right-hand side b_j
// (DESIGN section 4), with C the chosen curvature of o at theta. It never
// modifies rhs.
func Solve(ctx context.Context, o *Objective, theta []float64, rhs [][]float64, opt *Options) ([][]float64, *Report, error) {
	P := o.numParams()
	for i, b := range rhs {
		if len(b) != P {
			return nil, nil, fmt.Errorf("hvp: right-hand side %d has length %d, want %d", i, len(b), P)
		}
	}
	f, rep, err := factorize(ctx, o, theta, opt)
	if err != nil {
		return nil, nil, err
	}
	if len(rhs) == 0 {
		return nil, rep, nil
	}
	x := make([][]float64, len(rhs))
	if err := f.solveAll(ctx, x, rhs, rep); err != nil {
		return nil, nil, err
	}
	return x, rep, nil
}

// SolveRecorded is f.SolveAll that also records, when f came from
// Factorize, each right-hand side's iterations and relative residual in
// rep (as Solve does); for another Factor it is f.SolveAll.
func SolveRecorded(ctx context.Context, f Factor, x, b [][]float64, rep *Report) error {
	if ff, ok := f.(factor); ok && rep != nil {
		return ff.solveAll(ctx, x, b, rep)
	}
	return f.SolveAll(ctx, x, b)
}

// checkSolveArgs checks the shapes of a SolveAll call.
func checkSolveArgs(P int, x, b [][]float64) error {
	if len(x) != len(b) {
		return fmt.Errorf("hvp: %d right-hand sides but %d solution slots", len(b), len(x))
	}
	for i, v := range b {
		if len(v) != P {
			return fmt.Errorf("hvp: right-hand side %d has length %d, want %d", i, len(v), P)
		}
		if x[i] != nil && len(x[i]) != P {
			return fmt.Errorf("hvp: solution slot %d has length %d, want %d", i, len(x[i]), P)
		}
	}
	return nil
}

// setDamping sets lambda from the trace (DESIGN section 4). A
// non-positive trace (Report.Trace, for the caller to report) gives the
// damping of its magnitude.
func (rep *Report) setDamping(P int) {
	rep.Lambda = math.Abs(rep.Rho * rep.Trace / float64(P))
}

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

func factorExact(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (*eigFactor, error) {
	P := o.numParams()
	c, err := o.dense(ctx, opt.Curvature, theta, opt.Progress)
	if err != nil {
		return nil, err
	}
	rep.Trace = mat.Trace(c)
	rep.setDamping(P)
	var eig mat.EigenSym
	ok, err := interruptible(ctx, func() bool { return eig.Factorize(c, true) })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("hvp: eigendecomposition of the %d×%d %s failed", P, P, opt.Curvature)
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
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
	v := vecs.RawMatrix()
	if v.Stride != P {
		return nil, fmt.Errorf("hvp: internal error: eigenvector matrix has stride %d, want %d", v.Stride, P)
	}
	full := make([]float64, P*P)
	for i := 0; i < P; i++ {
		for k := 0; k < P; k++ {
			full[i*P+k] = c.At(i, k)
		}
	}
	return &eigFactor{P: P, vals: vals, inv: inv, vecs: v.Data, c: full, lam: lam}, nil
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

// interruptible runs f, which cannot be cancelled (a dense
// factorisation: minutes for several thousand parameters), and returns
// its result, or ctx's error as soon as ctx ends; f then finishes in the
// background and its result is dropped.
func interruptible(ctx context.Context, f func() bool) (bool, error) {
	done := make(chan bool, 1)
	go func() { done <- f() }()
	select {
	case ok := <-done:
		return ok, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// traceForIterative estimates trace(C) for CG and LiSSA.
func traceForIterative(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) error {
	n := opt.TraceSamples
	if n <= 0 {
		n = 32
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x7472616365))
	tr, se, err := o.TraceEstimate(ctx, opt.Curvature, theta, n, r)
	if err != nil {
		return err
	}
	rep.Trace, rep.TraceErr = tr, se
	rep.setDamping(o.numParams())
	return nil
}

// cgFactor is the CG method's factor: Krylov solves with
// curvature-vector products.
type cgFactor struct {
	o       *Objective
	theta   []float64
	c       Curvature
	lam     float64
	tol     float64
	maxIter int
	// progress reports right-hand sides done (Options.Progress).
	progress func(done, total int)
}

func (f *cgFactor) Dim() int { return len(f.theta) }

func (f *cgFactor) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.solveAll(ctx, x, b, nil)
}

func factorCG(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (*cgFactor, error) {
	P := o.numParams()
	if err := traceForIterative(ctx, o, theta, opt, rep); err != nil {
		return nil, err
	}
	tol := opt.Tol
	if tol <= 0 {
		tol = 1e-10
	}
	rep.Tol = tol
	maxIter := opt.MaxIter
	if maxIter <= 0 {
		maxIter = 10 * P
	}
	return &cgFactor{o: o, theta: theta, c: opt.Curvature, lam: rep.Lambda, tol: tol, maxIter: maxIter, progress: opt.Progress}, nil
}

func (f *cgFactor) solveAll(ctx context.Context, out, rhs [][]float64, rep *Report) error {
	P := len(f.theta)
	if err := checkSolveArgs(P, out, rhs); err != nil {
		return err
	}
	o, theta, lam, tol, maxIter := f.o, f.theta, f.lam, f.tol, f.maxIter
	apply := func(v, out []float64) error {
		if err := o.Apply(ctx, f.c, theta, v, out); err != nil {
			return err
		}
		for i := range out {
			out[i] += lam * v[i]
		}
		return nil
	}
	if rep != nil {
		rep.Iterations = make([]int, len(rhs))
		rep.Residuals = make([]float64, len(rhs))
	}
	for j, b := range rhs {
		var x []float64
		ap := make([]float64, P)
		bn := norm(b)
		it := 0
		if f.c == Hessian {
			// The Hessian may be indefinite: MINRES, not CG.
			var err error
			if x, it, err = minres(apply, b, tol, maxIter); err != nil {
				return err
			}
		} else {
			x = make([]float64, P)
		}
		r := append([]float64(nil), b...)
		p := append([]float64(nil), b...)
		rr := dot(r, r)
		for ; f.c != Hessian && it < maxIter && math.Sqrt(rr) > tol*bn; it++ {
			if err := apply(p, ap); err != nil {
				return err
			}
			pap := dot(p, ap)
			if pap <= 0 {
				return errs.Fix([]Option{OptCurvature, OptDamping}, "%w: conjugate gradients met non-positive curvature (p·(C+λI)p = %.4g) on right-hand side %d at iteration %d", ErrIndefinite, pap, j, it)
			}
			alpha := rr / pap
			for i := range x {
				x[i] += alpha * p[i]
				r[i] -= alpha * ap[i]
			}
			rr2 := dot(r, r)
			beta := rr2 / rr
			rr = rr2
			for i := range p {
				p[i] = r[i] + beta*p[i]
			}
		}
		if out[j] == nil {
			out[j] = x
		} else {
			copy(out[j], x)
		}
		if f.progress != nil {
			f.progress(j+1, len(rhs))
		}
		if rep == nil {
			continue
		}
		// The true residual, not the recursively updated one.
		if err := apply(x, ap); err != nil {
			return err
		}
		for i := range ap {
			ap[i] -= b[i]
		}
		rep.Iterations[j] = it
		rep.Residuals[j] = norm(ap) / math.Max(bn, math.SmallestNonzeroFloat64)
		if it >= maxIter && rep.Residuals[j] > tol {
			rep.Unconverged++
		}
	}
	return nil
}

// powerMaxEig estimates the largest eigenvalue of C (in magnitude) by
// power iteration.
func powerMaxEig(ctx context.Context, o *Objective, c Curvature, theta []float64, iters int, r *rand.Rand) (float64, error) {
	P := o.numParams()
	v := make([]float64, P)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	cv := make([]float64, P)
	ev := 0.0
	for k := 0; k < iters; k++ {
		n := norm(v)
		for i := range v {
			v[i] /= n
		}
		if err := o.Apply(ctx, c, theta, v, cv); err != nil {
			return 0, err
		}
		ev = dot(v, cv)
		copy(v, cv)
	}
	return ev, nil
}

// lissaFactor is the LiSSA method's factor: the recursion with a fixed
// scale and damping, run afresh for every right-hand side.
type lissaFactor struct {
	o     *Objective
	theta []float64
	opt   Options
	sigma float64
	lam   float64
}

func (f *lissaFactor) Dim() int { return len(f.theta) }

func (f *lissaFactor) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.solveAll(ctx, x, b, nil)
}

func factorLiSSA(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (*lissaFactor, error) {
	sigma := opt.Scale
	if sigma <= 0 {
		ev, err := powerMaxEig(ctx, o, opt.Curvature, theta, 50, rand.New(rand.NewPCG(opt.Seed, 0x706f776572)))
		if err != nil {
			return nil, err
		}
		rep.MaxEig = ev
		sigma = 1.1 * math.Abs(ev)
	}
	// The same lambda as the other methods, lambda = rho trace(C) / P,
	// reached as lambda_0 * sigma.
	if err := traceForIterative(ctx, o, theta, opt, rep); err != nil {
		return nil, err
	}
	return &lissaFactor{o: o, theta: theta, opt: *opt, sigma: sigma, lam: rep.Lambda}, nil
}

func (f *lissaFactor) solveAll(ctx context.Context, out, rhs [][]float64, rep *Report) error {
	o, theta, opt, sigma := f.o, f.theta, &f.opt, f.sigma
	P := len(theta)
	if err := checkSolveArgs(P, out, rhs); err != nil {
		return err
	}
	depth, repeats, bs := opt.Depth, opt.Repeats, opt.BatchSize
	if depth <= 0 {
		depth = 1000
	}
	if repeats <= 0 {
		repeats = 1
	}
	if bs <= 0 {
		bs = 1
	}
	lam0 := f.lam / sigma
	sample := opt.Sample
	if sample == nil {
		n := len(o.Batches)
		sample = func(r *rand.Rand, size int) ([]Job, float64) {
			jobs := make([]Job, size)
			for i := range jobs {
				jobs[i] = Job{Batch: r.IntN(n)}
			}
			return jobs, float64(n) / float64(size)
		}
	}
	iters := make([]int, len(rhs))
	nw := o.nworkersFor(len(rhs))
	ws := make([]*worker, max(1, nw))
	hvs := make([][]float64, len(ws))
	for wi := range ws {
		ws[wi], hvs[wi] = o.worker(wi), make([]float64, P)
	}
	err := par.For(ctx, len(rhs), nw, func(wi, j int) error {
		w, hv := ws[wi], hvs[wi]
		b := rhs[j]
		bn := norm(b)
		x := make([]float64, P)
		for rpt := 0; rpt < repeats; rpt++ {
			r := rand.New(rand.NewPCG(opt.Seed+uint64(rpt), uint64(j)))
			h := append([]float64(nil), b...)
			// Average the iterates of the second half (tail
			// averaging): same fixed point, far less sampling noise.
			tail := depth - depth/2
			avg := make([]float64, P)
			for s := 1; s <= depth; s++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				jobs, scale := sample(r, bs)
				if err := o.applyJobs(w, opt.Curvature, theta, jobs, scale, h, hv); err != nil {
					return err
				}
				for i := range h {
					h[i] = b[i] + (1-lam0)*h[i] - hv[i]/sigma
				}
				if hn := norm(h); math.IsNaN(hn) || hn > 1e8*math.Max(bn, 1e-300)*float64(depth) {
					return errs.Fix([]Option{OptScale, OptDamping}, "%w on right-hand side %d at step %d (|h| = %.3g, |b| = %.3g): the scale sigma = %.4g is below the largest eigenvalue of the sampled curvature", ErrDiverged, j, s, hn, bn, sigma)
				}
				if s > depth-tail {
					for i, v := range h {
						avg[i] += v
					}
				}
			}
			for i := range x {
				x[i] += avg[i] / float64(tail) / sigma / float64(repeats)
			}
		}
		if out[j] == nil {
			out[j] = x
		} else {
			copy(out[j], x)
		}
		iters[j] = depth * repeats
		return nil
	})
	if err != nil {
		return err
	}
	if rep == nil {
		return nil
	}
	rep.Iterations = iters
	rep.Residuals = make([]float64, len(rhs))
	// Exact residuals against the full curvature.
	cx := make([]float64, P)
	for j, x := range out {
		if err := o.Apply(ctx, opt.Curvature, theta, x, cx); err != nil {
			return err
		}
		for i := range cx {
			cx[i] += f.lam*x[i] - rhs[j][i]
		}
		rep.Residuals[j] = norm(cx) / math.Max(norm(rhs[j]), math.SmallestNonzeroFloat64)
	}
	return nil
}
