package hvp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
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
)

func (m Method) String() string {
	return [...]string{"exact", "cg", "lissa"}[m]
}

// Options configure Solve. The zero value solves exactly with the Hessian
// and the default damping.
type Options struct {
	Method    Method
	Curvature Curvature
	// Damping is rho in lambda = rho * trace(C) / P (DESIGN section 4):
	// damping relative to the mean eigenvalue. 0 means DefaultDamping;
	// use a negative value for no damping at all.
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
	// dense curvature for Exact, right-hand sides for CG and LiSSA. It is
	// called from one goroutine at a time.
	Progress func(done, total int)
}

// DefaultDamping is rho when Options.Damping is 0. The curvature of a
// recurrent model's summed loss has a few very large eigenvalues (output
// scale directions, 1e7 for the paper's RNN) that dominate its mean, so
// rho must be small for lambda to be small against the bulk of the
// spectrum: on the bundled synthetic study, rho = 0.01 made influence
// steps 25-50 times too short (cosine 0.26 with exact re-training), while
// 1e-6 agrees with exact re-training (mean cosine 0.96, step lengths 0.8
// to 1.0) and still keeps exactly singular directions well posed.
const DefaultDamping = 1e-6

// Report says what a Solve used and how well it converged.
type Report struct {
	Method    Method
	Curvature Curvature
	Rho       float64 // relative damping as given
	Lambda    float64 // absolute damping added to C
	Trace     float64 // trace(C): exact (Exact) or estimated
	TraceErr  float64 // standard error of the estimate; 0 when exact
	// MinEig and MaxEig are C's extreme eigenvalues (Exact; for LiSSA
	// MaxEig is the power-iteration estimate when Scale was 0).
	MinEig, MaxEig float64
	// Iterations and Residuals per right-hand side: the relative residual
	// |(C + lambda I) x - b| / |b| at the end (computed exactly for CG and
	// LiSSA with one extra curvature-vector product).
	Iterations []int
	Residuals  []float64
	// Warnings are plain-language notes for the report: an indefinite
	// curvature, a non-positive trace, slow convergence.
	Warnings []string
}

// ErrDiverged is returned when LiSSA's iterates grow without bound.
var ErrDiverged = errors.New("hvp: the LiSSA recursion diverged")

// ErrIndefinite is returned when C + lambda I is not positive definite
// where a method needs it (CG meets a direction of non-positive curvature).
var ErrIndefinite = errors.New("hvp: the damped curvature is not positive definite")

// Solve returns x_j = (C + lambda I)^-1 b_j for every right-hand side b_j
// (DESIGN section 4), with C the chosen curvature of o at theta. It never
// modifies rhs.
func Solve(ctx context.Context, o *Objective, theta []float64, rhs [][]float64, opt *Options) ([][]float64, *Report, error) {
	if opt == nil {
		opt = &Options{}
	}
	P := o.numParams()
	if err := checkLen("theta", theta, P); err != nil {
		return nil, nil, err
	}
	for i, b := range rhs {
		if len(b) != P {
			return nil, nil, fmt.Errorf("hvp: right-hand side %d has length %d, want %d", i, len(b), P)
		}
	}
	rho := opt.Damping
	if rho == 0 {
		rho = DefaultDamping
	}
	if rho < 0 {
		rho = 0
	}
	rep := &Report{Method: opt.Method, Curvature: opt.Curvature, Rho: rho, MinEig: math.NaN(), MaxEig: math.NaN()}
	switch opt.Method {
	case Exact:
		x, err := solveExact(ctx, o, theta, rhs, opt, rep)
		return x, rep, err
	case CG:
		x, err := solveCG(ctx, o, theta, rhs, opt, rep)
		return x, rep, err
	case LiSSA:
		x, err := solveLiSSA(ctx, o, theta, rhs, opt, rep)
		return x, rep, err
	}
	return nil, nil, fmt.Errorf("hvp: unknown method %d", opt.Method)
}

// setDamping sets lambda from the trace and records the warnings DESIGN
// section 4 asks for.
func (rep *Report) setDamping(P int) {
	rep.Lambda = rep.Rho * rep.Trace / float64(P)
	if rep.Trace <= 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the %s has a non-positive trace (%.4g): the influence (Newton) step is not a descent step; use the Gauss-Newton curvature", rep.Curvature, rep.Trace))
		rep.Lambda = math.Abs(rep.Lambda)
	}
}

func solveExact(ctx context.Context, o *Objective, theta []float64, rhs [][]float64, opt *Options, rep *Report) ([][]float64, error) {
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
	if rep.MinEig < -lam {
		neg := 0
		for _, v := range vals {
			if v < -lam {
				neg++
			}
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the %s has %d eigenvalue(s) below -lambda (smallest %.4g, lambda %.4g): the damped matrix is indefinite and the influence step is not a descent step; use the Gauss-Newton curvature or more damping", opt.Curvature, neg, rep.MinEig, lam))
	}
	inv := make([]float64, P)
	for i, v := range vals {
		d := v + lam
		if d == 0 {
			return nil, fmt.Errorf("%w: eigenvalue %.4g + lambda is exactly 0; increase the damping", ErrIndefinite, v)
		}
		inv[i] = 1 / d
	}
	// X = V diag(inv) V^T B, as two matrix products over all columns,
	// done transposed (one right-hand side per row): X^T = B^T V diag(inv) V^T.
	n := len(rhs)
	if n == 0 {
		return nil, nil
	}
	bt := make([]float64, n*P)
	for j, col := range rhs {
		copy(bt[j*P:], col)
	}
	v := vecs.RawMatrix()
	if v.Stride != P {
		return nil, fmt.Errorf("hvp: internal error: eigenvector matrix has stride %d, want %d", v.Stride, P)
	}
	tt := make([]float64, n*P)
	graph.MatMul(false, false, n, P, P, bt, v.Data, tt)
	for j := 0; j < n; j++ {
		row := tt[j*P : (j+1)*P]
		for i := range row {
			row[i] *= inv[i]
		}
	}
	xt := make([]float64, n*P)
	graph.MatMul(false, true, n, P, P, tt, v.Data, xt)
	// Residuals against the dense matrix, (C + lambda I) X - B, as one
	// more product over all columns.
	full := make([]float64, P*P)
	for i := 0; i < P; i++ {
		for k := 0; k < P; k++ {
			full[i*P+k] = c.At(i, k)
		}
	}
	rt := tt // reused
	graph.MatMul(false, false, n, P, P, xt, full, rt)
	out := make([][]float64, n)
	rep.Iterations = make([]int, n)
	rep.Residuals = make([]float64, n)
	for j := range out {
		out[j] = xt[j*P : (j+1)*P : (j+1)*P]
		res := 0.0
		for i, r := range rt[j*P : (j+1)*P] {
			d := r + lam*out[j][i] - rhs[j][i]
			res += d * d
		}
		rep.Residuals[j] = math.Sqrt(res) / math.Max(norm(rhs[j]), math.SmallestNonzeroFloat64)
	}
	return out, nil
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

func solveCG(ctx context.Context, o *Objective, theta []float64, rhs [][]float64, opt *Options, rep *Report) ([][]float64, error) {
	P := o.numParams()
	if err := traceForIterative(ctx, o, theta, opt, rep); err != nil {
		return nil, err
	}
	tol := opt.Tol
	if tol <= 0 {
		tol = 1e-10
	}
	maxIter := opt.MaxIter
	if maxIter <= 0 {
		maxIter = 10 * P
	}
	lam := rep.Lambda
	apply := func(v, out []float64) error {
		if err := o.Apply(ctx, opt.Curvature, theta, v, out); err != nil {
			return err
		}
		for i := range out {
			out[i] += lam * v[i]
		}
		return nil
	}
	out := make([][]float64, len(rhs))
	rep.Iterations = make([]int, len(rhs))
	rep.Residuals = make([]float64, len(rhs))
	for j, b := range rhs {
		var x []float64
		ap := make([]float64, P)
		bn := norm(b)
		it := 0
		if opt.Curvature == Hessian {
			// The Hessian may be indefinite: MINRES, not CG.
			var err error
			if x, it, err = minres(apply, b, tol, maxIter); err != nil {
				return nil, err
			}
		} else {
			x = make([]float64, P)
		}
		r := append([]float64(nil), b...)
		p := append([]float64(nil), b...)
		rr := dot(r, r)
		for ; opt.Curvature != Hessian && it < maxIter && math.Sqrt(rr) > tol*bn; it++ {
			if err := apply(p, ap); err != nil {
				return nil, err
			}
			pap := dot(p, ap)
			if pap <= 0 {
				return nil, fmt.Errorf("%w: conjugate gradients met non-positive curvature (p·(C+λI)p = %.4g) on right-hand side %d at iteration %d; use the Gauss-Newton curvature or more damping", ErrIndefinite, pap, j, it)
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
		// The true residual, not the recursively updated one.
		if err := apply(x, ap); err != nil {
			return nil, err
		}
		for i := range ap {
			ap[i] -= b[i]
		}
		out[j] = x
		rep.Iterations[j] = it
		rep.Residuals[j] = norm(ap) / math.Max(bn, math.SmallestNonzeroFloat64)
		if opt.Progress != nil {
			opt.Progress(j+1, len(rhs))
		}
		if it >= maxIter && rep.Residuals[j] > tol {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("conjugate gradients did not reach tolerance %.1g on right-hand side %d after %d iterations (residual %.2g)", tol, j, it, rep.Residuals[j]))
		}
	}
	return out, nil
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

func solveLiSSA(ctx context.Context, o *Objective, theta []float64, rhs [][]float64, opt *Options, rep *Report) ([][]float64, error) {
	P := o.numParams()
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
	lam0 := rep.Lambda / sigma
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
	out := make([][]float64, len(rhs))
	rep.Iterations = make([]int, len(rhs))
	rep.Residuals = make([]float64, len(rhs))
	errs := make([]error, len(rhs))
	next := make(chan int, len(rhs))
	for j := range rhs {
		next <- j
	}
	close(next)
	var wg sync.WaitGroup
	for wi := 0; wi < o.nworkersFor(len(rhs)); wi++ {
		w := o.worker(wi)
		wg.Add(1)
		go func() {
			defer wg.Done()
			hv := make([]float64, P)
			for j := range next {
				b := rhs[j]
				bn := norm(b)
				x := make([]float64, P)
				for rpt := 0; rpt < repeats && errs[j] == nil; rpt++ {
					r := rand.New(rand.NewPCG(opt.Seed+uint64(rpt), uint64(j)))
					h := append([]float64(nil), b...)
					// Average the iterates of the second half (tail
					// averaging): same fixed point, far less sampling noise.
					tail := depth - depth/2
					avg := make([]float64, P)
					for s := 1; s <= depth; s++ {
						if err := ctx.Err(); err != nil {
							errs[j] = err
							break
						}
						jobs, scale := sample(r, bs)
						if err := o.applyJobs(w, opt.Curvature, theta, jobs, scale, h, hv); err != nil {
							errs[j] = err
							break
						}
						for i := range h {
							h[i] = b[i] + (1-lam0)*h[i] - hv[i]/sigma
						}
						if hn := norm(h); math.IsNaN(hn) || hn > 1e8*math.Max(bn, 1e-300)*float64(depth) {
							errs[j] = fmt.Errorf("%w on right-hand side %d at step %d (|h| = %.3g, |b| = %.3g): the scale sigma = %.4g is below the largest eigenvalue of the sampled curvature; increase the scale or the damping", ErrDiverged, j, s, hn, bn, sigma)
							break
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
				out[j] = x
				rep.Iterations[j] = depth * repeats
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// Exact residuals against the full curvature.
	cx := make([]float64, P)
	for j, x := range out {
		if err := o.Apply(ctx, opt.Curvature, theta, x, cx); err != nil {
			return nil, err
		}
		for i := range cx {
			cx[i] += rep.Lambda*x[i] - rhs[j][i]
		}
		rep.Residuals[j] = norm(cx) / math.Max(norm(rhs[j]), math.SmallestNonzeroFloat64)
	}
	return out, nil
}
