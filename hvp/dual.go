package hvp

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// The dual (Woodbury) form of the damped Gauss-Newton matrix.
//
// The Gauss-Newton matrix of an objective with N loss terms is
//
//	C = J^T Λ J + r I = D^T D + r I,  D = Λ^1/2 J,
//
// J the N×P Jacobian of the terms' outputs, Λ = diag(w_i l''(y_i, f_i))
// (weight times Loss.SecondDerivative) and r the ridge. With
// mu = lambda + r, Woodbury's identity gives
//
//	(C + lambda I)^-1 b = (D^T D + mu I)^-1 b = (b - D^T (D D^T + mu I)^-1 D b) / mu,
//
// so one Cholesky factorisation of the N×N kernel K = D D^T + mu I
// replaces the P×P matrix of the exact method: when N < P it is smaller
// to hold and to factorise, and D costs one backward pass per loss term
// of an example (PerExampleGradients with Job.Outputs), not P
// curvature-vector products. Building it costs N^2 P multiply-adds for
// the kernel, about 5 N^3 for its eigenvalues (the report's MinEig and
// MaxEig) and N^3 / 3 for its factor; a solve costs 2 N P per
// right-hand side. Measured (BenchmarkDualRNN64): P = 4,353, N = 1,000,
// build and 100 solves in 1.3 s on 2 cores, against minutes for the
// dense P×P path.
//
// The solution's backward error is at rounding level for the condition
// number of C + lambda I, as the exact method's (about ten times the
// exact method's residual in the tests): b - D^T K^-1 D b cancels when b
// lies in the span of D's rows. With the default damping that condition
// number is at most 1 + P / rho.

// DualBytes is the memory of the dual form for N loss terms and P
// parameters, 8 (N P + 3 N^2) bytes at its peak: the N×P rows of D, and
// while factorising the kernel, its Cholesky factor and the copy that the
// eigenvalues are computed from (8 (N P + N^2) bytes are held after).
func DualBytes(N, P int) int64 {
	n, p := int64(N), int64(P)
	return 8 * (n*p + 3*n*n)
}

// DefaultDualMaxBytes is the memory bound DualFits uses when given none:
// 2 GiB: N = 10,000 terms with P = 20,000 parameters (4.0 GB) do not fit,
// N = 1,000 with P = 4,353 (59 MB) do.
const DefaultDualMaxBytes = 2 << 30

// DualReason says whether the dual form is the right exact solver for a
// problem, and why; the caller words it.
type DualReason int

const (
	// DualFewerTerms: N <= P and DualBytes(N, P) is within the bound, so
	// the N×N kernel is no larger than the P×P matrix of the exact
	// method: the dual form is the right choice.
	DualFewerTerms DualReason = iota
	// DualMoreTerms: N > P; the P×P matrix of the exact method is the
	// smaller one.
	DualMoreTerms
	// DualTooLarge: N <= P but DualBytes(N, P) exceeds the bound.
	DualTooLarge
)

func (r DualReason) String() string {
	switch r {
	case DualFewerTerms:
		return "fewer loss terms than parameters"
	case DualMoreTerms:
		return "more loss terms than parameters"
	case DualTooLarge:
		return "the loss terms' Jacobian exceeds the memory bound"
	}
	return fmt.Sprintf("DualReason(%d)", int(r))
}

// DualFits says whether Method Dual is the right exact solver for N loss
// terms (Objective.NumTerms) and P parameters within maxBytes of memory
// (DefaultDualMaxBytes when maxBytes <= 0): ok when N <= P and
// DualBytes(N, P) <= maxBytes. why gives the reason either way.
func DualFits(N, P int, maxBytes int64) (ok bool, why DualReason) {
	if maxBytes <= 0 {
		maxBytes = DefaultDualMaxBytes
	}
	switch {
	case N > P:
		return false, DualMoreTerms
	case DualBytes(N, P) > maxBytes:
		return false, DualTooLarge
	}
	return true, DualFewerTerms
}

// NumTerms returns N, the number of loss terms of the objective: the
// elements of its batches with nonzero weight.
func (o *Objective) NumTerms() int {
	n := 0
	for i := range o.Batches {
		for _, w := range o.Batches[i].Weight {
			if w != 0 {
				n++
			}
		}
	}
	return n
}

// dualMethod is Dual: the Gauss-Newton matrix in its dual (Woodbury)
// form, one Cholesky factor of the N×N kernel of the loss terms.
type dualMethod struct{}

func (dualMethod) String() string { return "dual" }

// dualFactor is Method Dual's factor: the rows of D and the Cholesky
// factor of D D^T + mu I.
type dualFactor struct {
	N, P int
	d    []float64 // D, row-major N×P
	chol mat.Cholesky
	mu   float64 // lambda + ridge
	// ridge is the objective's; vals are the kernel's eigenvalues
	// (ascending), kept for redamp.
	ridge float64
	vals  []float64
}

// redamp rebuilds the kernel from the kept rows and factorises it at
// rep.Lambda + ridge: the same numbers as factorize at that damping,
// without the Jacobian rows and the eigenvalues.
func (f *dualFactor) redamp(ctx context.Context, rep *Report) (factor, error) {
	g, err := newDualFactor(ctx, f.d, f.N, f.P, f.ridge, f.vals, rep)
	if err != nil {
		return nil, err
	}
	return g, nil
}

var _ factor = (*dualFactor)(nil)

func (f *dualFactor) Dim() int { return f.P }

func (f *dualFactor) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.solveAll(ctx, x, b, nil)
}

// factorize builds the dual factor of o's Gauss-Newton matrix at theta:
// D from the output Jacobian, trace(C) = |D|_F^2 + P r exactly, lambda
// as the exact method sets it, the kernel's eigenvalues for the report
// (C's are those plus r, and r on the P - N directions D does not reach)
// and its Cholesky factor.
func (dualMethod) factorize(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (factor, error) {
	if opt.Curvature != GaussNewton {
		return nil, fmt.Errorf("hvp: the dual method needs the Gauss-Newton curvature, not the %s", opt.Curvature)
	}
	P := o.numParams()
	d, N, err := o.gaussNewtonRows(ctx, theta, opt.Progress)
	if err != nil {
		return nil, err
	}
	tr := 0.0
	for _, v := range d {
		tr += v * v
	}
	rep.Trace = tr + float64(P)*o.Ridge
	rep.setDamping(P)
	f, err := newDualFactor(ctx, d, N, P, o.Ridge, nil, rep)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// newDualFactor is the dual method's factor of the Jacobian rows d (N×P):
// the kernel D D^T, its eigenvalues (vals, or computed when nil) and the
// Cholesky factor at rep.Lambda + ridge, with the extreme eigenvalues
// and the count below -lambda in rep.
func newDualFactor(ctx context.Context, d []float64, N, P int, ridge float64, vals []float64, rep *Report) (*dualFactor, error) {
	f := &dualFactor{N: N, P: P, d: d, mu: rep.Lambda + ridge, ridge: ridge}
	if f.mu <= 0 {
		return nil, fmt.Errorf("%w: the dual method needs lambda + ridge > 0 (lambda %.4g, ridge %.4g); add damping", ErrIndefinite, rep.Lambda, ridge)
	}
	if N == 0 {
		rep.MinEig, rep.MaxEig = ridge, ridge
		return f, nil
	}
	k := make([]float64, N*N)
	// K = D D^T in blocks of rows, against D^T formed once, so that a
	// cancelled context ends the build between blocks (at N = 10,000 and
	// P = 17,000 the product alone takes minutes).
	dt := make([]float64, P*N)
	for i := 0; i < N; i++ {
		for j, v := range d[i*P : (i+1)*P] {
			dt[j*N+i] = v
		}
	}
	const kernBlock = 64
	for lo := 0; lo < N; lo += kernBlock {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(N, lo+kernBlock)
		graph.MatMul(false, false, hi-lo, N, P, d[lo*P:hi*P], dt, k[lo*N:hi*N])
	}
	kern := mat.NewSymDense(N, k)
	// Symmetrise: the product's halves agree only up to rounding.
	for i := 0; i < N; i++ {
		for j := i + 1; j < N; j++ {
			v := (k[i*N+j] + k[j*N+i]) / 2
			k[i*N+j], k[j*N+i] = v, v
		}
	}
	if vals == nil {
		ok, err := interruptible(ctx, func() bool {
			w, _, ok, err := eigenSym(ctx, kern, false)
			vals = w
			return ok && err == nil
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("hvp: eigendecomposition of the %d×%d Gauss-Newton kernel failed", N, N)
		}
	}
	f.vals = vals
	rep.NegativeEigs = 0
	// C's eigenvalues: the P largest of K's (all N when N <= P) plus r,
	// and r itself P - N times.
	top := vals[max(0, N-P):]
	rep.MinEig, rep.MaxEig = top[0]+ridge, top[len(top)-1]+ridge
	if N < P {
		rep.MinEig = math.Min(rep.MinEig, ridge)
	}
	for _, v := range top {
		if v+ridge < -rep.Lambda {
			rep.NegativeEigs++
		}
	}
	if N < P && ridge < -rep.Lambda {
		rep.NegativeEigs += P - N
	}
	for i := 0; i < N; i++ {
		k[i*N+i] += f.mu
	}
	ok, err := interruptible(ctx, func() bool { return f.chol.Factorize(kern) })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the Cholesky factorisation of the %d×%d kernel D D^T + %.4g I failed; increase the damping", ErrIndefinite, N, N, f.mu)
	}
	return f, nil
}

// solveAll applies (D^T D + mu I)^-1 by Woodbury's identity, solveChunk
// right-hand sides at a time as matrix products: A = D B^T, Y = K^-1 A,
// X^T = (B^T - Y^T D) / mu. With rep, the relative residuals
// |(D^T D + mu I) x - b| / |b| are computed with two more products.
func (f *dualFactor) solveAll(ctx context.Context, x, b [][]float64, rep *Report) error {
	P, N := f.P, f.N
	if err := checkSolveArgs(P, x, b); err != nil {
		return err
	}
	if rep != nil {
		rep.Iterations = make([]int, len(b))
		rep.Residuals = make([]float64, len(b))
	}
	nc := min(solveChunk, len(b))
	bt := make([]float64, nc*P)
	xt := make([]float64, nc*P)
	a := make([]float64, N*nc)
	return packChunks(ctx, b, P, bt, func(lo, nb int) error {
		hi := lo + nb
		if N > 0 {
			graph.MatMul(false, true, N, nb, P, f.d, bt[:nb*P], a[:N*nb])
			y, err := f.kernelSolve(a[:N*nb], nb)
			if err != nil {
				return err
			}
			graph.MatMul(true, false, nb, P, N, y, f.d, xt[:nb*P])
		} else {
			clear(xt)
		}
		for j := lo; j < hi; j++ {
			if x[j] == nil {
				x[j] = make([]float64, P)
			}
			src, bj := xt[(j-lo)*P:(j-lo+1)*P], bt[(j-lo)*P:(j-lo+1)*P]
			for i := range x[j] {
				x[j][i] = (bj[i] - src[i]) / f.mu
			}
		}
		if rep != nil {
			f.residuals(x[lo:hi], bt[:nb*P], a[:N*nb], xt[:nb*P], rep.Residuals[lo:hi])
		}
		return nil
	})
}

// kernelSolve returns K^-1 A for the N×nb matrix a (row-major), as a
// row-major N×nb slice.
func (f *dualFactor) kernelSolve(a []float64, nb int) ([]float64, error) {
	var y mat.Dense
	if err := f.chol.SolveTo(&y, mat.NewDense(f.N, nb, a)); err != nil {
		var c mat.Condition
		if !errors.As(err, &c) {
			return nil, errs.Wrapf(err, "hvp: dual kernel solve: ")
		}
		// An ill-conditioned kernel still gives its solution; the
		// residuals in the report say how good it is.
	}
	raw := y.RawMatrix()
	if raw.Stride == nb {
		return raw.Data[:f.N*nb], nil
	}
	out := make([]float64, f.N*nb)
	for i := 0; i < f.N; i++ {
		copy(out[i*nb:(i+1)*nb], raw.Data[i*raw.Stride:])
	}
	return out, nil
}

// residuals sets res[j] = |(D^T D + mu I) x_j - b_j| / |b_j| for the
// chunk's solutions x, with bt their right-hand sides as rows and a, xt
// scratch of the chunk's sizes.
func (f *dualFactor) residuals(x [][]float64, bt, a, xt, res []float64) {
	P, N, nb := f.P, f.N, len(x)
	for j := range x {
		copy(xt[j*P:], x[j])
	}
	cx := make([]float64, nb*P)
	if N > 0 {
		graph.MatMul(false, true, N, nb, P, f.d, xt, a) // D X^T
		graph.MatMul(true, false, nb, P, N, a, f.d, cx) // X D^T D
	}
	for j := range x {
		s, bn := 0.0, 0.0
		for i := 0; i < P; i++ {
			bi := bt[j*P+i]
			r := cx[j*P+i] + f.mu*x[j][i] - bi
			s += r * r
			bn += bi * bi
		}
		res[j] = math.Sqrt(s) / math.Max(math.Sqrt(bn), math.SmallestNonzeroFloat64)
	}
}

// gaussNewtonRows returns D = Λ^1/2 J, one row sqrt(w_i l”(y_i, f_i))
// d f_i / d theta per loss term (elements with nonzero weight, in the
// order of the batches and then of the elements), row-major N×P, and N.
// A batch that says where its examples are (Batch.ExampleAxes) and
// separates into them gives, per pass, one row for every example: its
// k-th term (PerExampleGradients with Job.Outputs); any other batch takes
// one backward pass per term. progress, when set, is called with the
// passes done.
func (o *Objective) gaussNewtonRows(ctx context.Context, theta []float64, progress func(done, total int)) ([]float64, int, error) {
	P := o.numParams()
	if err := checkLen("theta", theta, P); err != nil {
		return nil, 0, err
	}
	if o.Loss.Grouped() {
		return nil, 0, fmt.Errorf("hvp: the dual method needs a loss of single elements, not %v; use the exact or CG method", o.Loss)
	}
	// Λ per term, from one forward pass per batch.
	lams := make([][]float64, len(o.Batches))
	err := o.eachJob(ctx, len(o.Batches), func(w *worker, i int) error {
		b := &o.Batches[i]
		outs, err := w.state(b.Program).Forward(theta, b.Inputs)
		if err != nil {
			return errs.Wrapf(err, "batch %d: ", i)
		}
		f := outs[b.Output].F
		if len(b.Target) != len(f) || len(b.Weight) != len(f) {
			return fmt.Errorf("batch %d: targets (%d) and weights (%d) do not match the output's %d elements", i, len(b.Target), len(b.Weight), len(f))
		}
		lam := make([]float64, len(f))
		for e, we := range b.Weight {
			if we == 0 {
				continue
			}
			lam[e] = we * o.Loss.SecondDerivative(b.Target[e], f[e])
			if !(lam[e] >= 0) || math.IsInf(lam[e], 0) {
				return fmt.Errorf("batch %d, element %d: the Gauss-Newton weight w l'' = %.4g is not a finite non-negative number", i, e, lam[e])
			}
		}
		lams[i] = lam
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	// Terms and passes.
	var passes []rowPass
	N := 0
	for i := range o.Batches {
		b := &o.Batches[i]
		first := N
		var terms []int // element of each of the batch's terms
		for e, we := range b.Weight {
			if we != 0 {
				terms = append(terms, e)
			}
		}
		N += len(terms)
		ids, nex, err := o.termExamples(b)
		if err != nil {
			return nil, 0, errs.Wrapf(err, "hvp: batch %d: ", i)
		}
		if ids == nil {
			for t, e := range terms {
				passes = append(passes, rowPass{batch: i, elems: []int{e}, rows: []int{first + t}})
			}
			continue
		}
		// Pass k takes every example's k-th term.
		perEx := make([][]int, nex) // per example, the indices in terms of its terms
		np := 0
		for t, e := range terms {
			id := ids[e]
			perEx[id] = append(perEx[id], t)
			np = max(np, len(perEx[id]))
		}
		for k := 0; k < np; k++ {
			p := rowPass{batch: i, examples: true, elems: make([]int, nex), rows: make([]int, nex)}
			for q := range p.elems {
				p.elems[q], p.rows[q] = -1, -1
				if k < len(perEx[q]) {
					t := perEx[q][k]
					p.elems[q], p.rows[q] = terms[t], first+t
				}
			}
			passes = append(passes, p)
		}
	}
	d := make([]float64, N*P)
	if err := o.runRowPasses(ctx, theta, passes, d, progress); err != nil {
		return nil, 0, err
	}
	// Scale row i by sqrt(Λ_i).
	row := 0
	for i := range o.Batches {
		for e, we := range o.Batches[i].Weight {
			if we == 0 {
				continue
			}
			s := math.Sqrt(lams[i][e])
			r := d[row*P : (row+1)*P]
			for j := range r {
				r[j] *= s
			}
			row++
		}
	}
	return d, N, nil
}

// rowPass is one backward pass of gaussNewtonRows on batch batch: with
// examples, elems[q] is the element of example q's term (-1: none) and
// rows[q] its row of D; without, elems and rows have one entry, a term
// whose row is the whole batch's gradient of that element.
type rowPass struct {
	batch       int
	examples    bool
	elems, rows []int
}

// rowRound is how many passes runRowPasses gives the workers at once, per
// worker: enough to balance them, few enough that the masks stay small.
const rowRound = 8

// runRowPasses runs the passes in rounds, writing the rows d f_e / d theta
// into d (row-major, P columns).
func (o *Objective) runRowPasses(ctx context.Context, theta []float64, passes []rowPass, d []float64, progress func(done, total int)) error {
	P := len(theta)
	R := rowRound * max(1, o.nworkersFor(len(passes)))
	for lo := 0; lo < len(passes); lo += R {
		hi := min(lo+R, len(passes))
		var exJobs, termJobs []Job
		var exOut [][][]float64
		var termOut [][]float64
		for _, p := range passes[lo:hi] {
			w := make([]float64, len(o.Batches[p.batch].Weight))
			if !p.examples {
				w[p.elems[0]] = 1
				termJobs = append(termJobs, Job{Batch: p.batch, Weight: w, Outputs: true})
				termOut = append(termOut, d[p.rows[0]*P:(p.rows[0]+1)*P:(p.rows[0]+1)*P])
				continue
			}
			out := make([][]float64, len(p.elems))
			for q, e := range p.elems {
				if e < 0 {
					out[q] = make([]float64, P) // an example without a k-th term
					continue
				}
				w[e] = 1
				r := p.rows[q]
				out[q] = d[r*P : (r+1)*P : (r+1)*P]
			}
			exJobs = append(exJobs, Job{Batch: p.batch, Weight: w, Outputs: true})
			exOut = append(exOut, out)
		}
		if len(exJobs) > 0 {
			if err := o.PerExampleGradients(ctx, theta, exJobs, exOut, nil); err != nil {
				return err
			}
		}
		if len(termJobs) > 0 {
			if err := o.Gradients(ctx, theta, termJobs, termOut, nil); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(hi, len(passes))
		}
	}
	return nil
}

// termExamples returns the example of every element of batch b's loss
// output when the batch separates into examples (Batch.ExampleAxes) and
// every term belongs to one example; nil when it does not, and the
// rows are then taken one backward pass per term. n is the number of
// examples.
func (o *Objective) termExamples(b *Batch) (ids []int32, n int, err error) {
	if b.ExampleAxes == nil {
		return nil, 0, nil
	}
	x, err := o.examplesOf(b)
	if errors.Is(err, graph.ErrNotSeparable) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	ids, n = x.Output(b.Output), x.NumExamples()
	if ids == nil {
		return nil, 0, nil
	}
	for e, w := range b.Weight {
		if w != 0 && (e >= len(ids) || ids[e] < 0 || int(ids[e]) >= n) {
			return nil, 0, nil
		}
	}
	return ids, n, nil
}
