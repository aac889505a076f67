package hvp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Method is how Factorize and Solve apply (C + lambda I)^-1: one of the
// values Exact (exact.go), Dual (dual.go), CG (cg.go) and LiSSA
// (lissa.go), each a type of its own in its own file, as gonum's
// optimize.Method is; nil means Exact. A method's factorize prepares its
// factor and fills the report; the factor's solveAll records per
// right-hand side what it did.
type Method interface {
	fmt.Stringer
	// factorize prepares the method's factor of the curvature
	// opt.Curvature of o at theta, recording in rep what it finds (trace,
	// lambda, extreme eigenvalues, tolerance).
	factorize(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (factor, error)
}

// The methods.
var (
	// Exact forms C densely, inverts C + lambda I once (Cholesky, or LU
	// with one step of refinement per solve when it is indefinite) and
	// applies the
	// inverse to all right-hand sides as one matrix product. Best up to a
	// few thousand parameters.
	Exact Method = exactMethod{}
	// CG solves C + lambda I by Krylov iterations, one solve per
	// right-hand side, with curvature-vector products only: conjugate
	// gradients for the Gauss-Newton matrix, MINRES (conjugate gradients'
	// counterpart for symmetric indefinite systems) for the Hessian.
	CG Method = cgMethod{}
	// LiSSA is the paper's stochastic recursion (docs/design.md, section 4.8)
	// with blockwise batch sampling.
	LiSSA Method = lissaMethod{}
	// Dual is exact like Exact, for the Gauss-Newton curvature only,
	// through the N×N kernel of the N loss terms instead of the P×P
	// matrix (Woodbury's identity, see dual.go): the exact solver for
	// models with fewer loss terms than parameters (DualFits says when).
	// It holds the N×P weighted output Jacobian and the kernel's
	// Cholesky factor, 8 (N P + N^2) bytes (DualBytes: the peak while
	// factorising), and needs lambda + ridge > 0. Its factor's SolveAll
	// allows x[j] to be b[j].
	Dual Method = dualMethod{}
)

// Options configure Solve and Factorize. The zero value solves exactly
// with the Gauss-Newton curvature and its default damping.
type Options struct {
	// Method is the solver (nil: Exact).
	Method    Method
	Curvature Curvature
	// Damping is rho in lambda = rho * trace(C) / P (docs/design.md,
	// section 4.3): damping relative to the mean eigenvalue. 0 means the
	// default for the curvature with an unknown stationarity
	// (DefaultDampingFor); use a negative value for no damping at all.
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

// DefaultGaussNewtonDamping and DefaultStationaryGaussNewtonDamping are
// the ends of the default rho for the Gauss-Newton curvature
// (DefaultDampingFor): lambda = rho trace(C) / P. Chosen by measurement
// with the Newton leave-one-block-out estimator (mean interval width over
// the test-set oracle width, pooled coverage; the models of
// benchmarks/influence and examples/synthetic):
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
// and on benchmarks/trust's mini-batch Adam GRU gru_wd (weight_decay
// 1e-4, so the right ridge is 0.38; stationarity ratio 111; audit
// --shift 1 --ridge R --damping RHO on its test.csv):
//
//	--ridge                             rho 1e-4       rho 1e-3       rho 1e-2
//	0 or 1e-4 (weight_decay as given)   1.34x  0.941   1.13x  0.924   1.05x  0.908
//	0.38 (w N, the right one)           1.12x  0.922   1.10x  0.918   1.05x  0.907
//
// A model stopped by a stochastic optimiser away from a stationary point
// carries gradient along directions of tiny curvature that only lambda
// bounds: a small lambda amplifies it into wide intervals (1.3-1.5 times
// the oracle at 1e-4, 8 times at 1e-6), and 1e-3 is the smallest rho that
// keeps every width within 1.3 times the oracle. A model at a stationary
// point of its loss has no such gradient: there damping only shortens the
// leave-one-out steps and lowers coverage where leverage is high (the
// stationary n = 100 model loses 4.5 points of coverage from 1e-4 to
// 1e-3), so 1e-4 suffices. What tells the two apart is the model, not
// the ridge the user passes: the earlier rule (1e-4 whenever a ridge was
// given) moved a GRU's width by 18% between --ridge 0 and --ridge 1e-4,
// identical models. The ridge itself damps (it adds R to every
// eigenvalue), which the table's 0.38 row shows.
const (
	DefaultGaussNewtonDamping           = 1e-3
	DefaultStationaryGaussNewtonDamping = 1e-4
)

// DefaultDampingFor is the default rho of curvature c for a model whose
// stationarity ratio (the norm of the total training gradient over the
// median per-block gradient norm) is stationarity: DefaultDamping for
// the Hessian; for the Gauss-Newton matrix it goes continuously from
// DefaultStationaryGaussNewtonDamping at a stationary point (ratio 0) to
// DefaultGaussNewtonDamping where the total gradient is as large as a
// block's (ratio 1 or more), linearly in the ratio. Pass +Inf (or NaN)
// when the ratio is not known: the non-stationary default, the safe one.
func DefaultDampingFor(c Curvature, stationarity float64) float64 {
	if c == Hessian {
		return DefaultDamping
	}
	s := 1.0
	if stationarity >= 0 && stationarity < 1 {
		s = stationarity
	}
	return DefaultStationaryGaussNewtonDamping + s*(DefaultGaussNewtonDamping-DefaultStationaryGaussNewtonDamping)
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
// leave-one-block-out estimator (docs/design.md, section 4.5) needs nothing
// else of the curvature, so any approximation that can apply its inverse (a
// low-rank one, say) can stand in.
type Factor interface {
	// Dim is the number of parameters P.
	Dim() int
	// SolveAll sets x[j] = (C + lambda I)^-1 b[j] for every j (x[j] is
	// allocated when nil, overwritten otherwise; b is not modified).
	SolveAll(ctx context.Context, x, b [][]float64) error
}

// factor is what a Method prepares: a Factor whose solve can also
// record, per right-hand side, its iterations and residuals in a report
// (rep nil: none). Factorization wraps it.
type factor interface {
	Factor
	solveAll(ctx context.Context, x, b [][]float64, rep *Report) error
}

// Factorization is (C + lambda I)^-1 as Factorize prepared it: a Factor
// that can also record its solves in the Report Factorize returned
// (SolveRecorded).
type Factorization struct {
	f   factor
	rep *Report
}

// Dim is the number of parameters P.
func (f *Factorization) Dim() int { return f.f.Dim() }

// SolveAll sets x[j] = (C + lambda I)^-1 b[j] for every j, recording
// nothing (see Factor).
func (f *Factorization) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.f.solveAll(ctx, x, b, nil)
}

// SolveRecorded is SolveAll that also records each right-hand side's
// iterations and relative residual |(C + lambda I) x - b| / |b| in the
// Report Factorize returned, replacing what an earlier SolveRecorded
// recorded (as Solve does; the residual costs one more curvature product
// or matrix product per right-hand side).
func (f *Factorization) SolveRecorded(ctx context.Context, x, b [][]float64) error {
	return f.f.solveAll(ctx, x, b, f.rep)
}

// Factorize prepares (C + lambda I)^-1 for the curvature, damping and
// method of opt (docs/design.md, sections 4.2, 4.3 and 4.8), C that of o at
// theta. The report says what it found (trace, lambda, extreme eigenvalues,
// warnings); Factorization.SolveRecorded adds per-right-hand-side figures to
// it.
func Factorize(ctx context.Context, o *Objective, theta []float64, opt *Options) (*Factorization, *Report, error) {
	f, rep, err := factorize(ctx, o, theta, opt)
	if err != nil {
		return nil, nil, err
	}
	return &Factorization{f: f, rep: rep}, rep, nil
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
		rho = DefaultDampingFor(opt.Curvature, math.Inf(1))
	}
	if rho < 0 {
		rho = 0
	}
	method := opt.Method
	if method == nil {
		method = Exact
	}
	rep := &Report{Method: method, Curvature: opt.Curvature, Rho: rho, MinEig: math.NaN(), MaxEig: math.NaN()}
	f, err := method.factorize(ctx, o, theta, opt, rep)
	if err != nil {
		return nil, nil, err
	}
	return f, rep, nil
}

// Solve returns x_j = (C + lambda I)^-1 b_j for every right-hand side b_j
// (docs/design.md, section 4.8), with C the chosen curvature of o at theta. It
// never modifies rhs.
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

// setDamping sets lambda from the trace (docs/design.md, section 4.3). A
// non-positive trace (Report.Trace, for the caller to report) gives the
// damping of its magnitude.
func (rep *Report) setDamping(P int) {
	rep.Lambda = math.Abs(rep.Rho * rep.Trace / float64(P))
}

// interruptible runs f, a dense factorisation (minutes for several
// thousand parameters) that checks ctx only between its steps
// (eigenSym) or not at all (a Cholesky factorisation), and returns its
// result, or ctx's error as soon as ctx ends; f then runs on in the
// background to its next check, or to its end, and its result is
// dropped.
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
