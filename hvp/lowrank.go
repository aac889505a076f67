package hvp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// LowRankOptions configure NewLowRank. Nil gives a rank-100 Gauss-Newton
// factor on all the data with the default damping.
type LowRankOptions struct {
	// Curvature is the matrix C. Use GaussNewton (the zero value is the
	// Hessian, as in Options): the complement constant and the solve
	// assume a positive semi-definite C.
	Curvature Curvature
	// Rank is k, the number of Lanczos steps and of kept Ritz pairs
	// (default 100; at most P).
	Rank int
	// Damping is rho in lambda = rho trace(C) / P, as Options.Damping: 0
	// means DefaultDamping, negative means none.
	Damping float64
	// TraceSamples is the number of Hutchinson vectors estimating the
	// trace of C on the complement of the Krylov subspace (default 16).
	TraceSamples int
	// Subsample, when positive and below the number of batches, builds
	// the curvature from that many batches drawn without replacement
	// (with Seed) and scaled to the whole: C ~= (W / W_S) C_S + r I, with
	// W and W_S the total loss weight of all and of the drawn batches,
	// C_S the drawn batches' curvature without the ridge r, which is
	// added exactly.
	Subsample int
	// Probe, when set, are vectors like the ones to be solved (a few
	// block gradients): the complement constant of the solve is then
	// their aggregate Rayleigh quotient on the complement, sum b'^T C b' /
	// sum |b'|^2 with b' = b - U^T U b, which minimises the C-norm error
	// of b'/c over them (one more curvature-vector product per probe).
	// Without probes the constant is Rest, the complement's mean
	// eigenvalue. Measured on the paper RNN, probes cut the error of the
	// linearised predictions by a third to a half (RESULTS.md).
	Probe [][]float64
	// InverseProbe, when set, are vectors whose quadratic forms
	// b^T (C + lambda I)^-1 b the solves must get right, such as the
	// output-Jacobian rows of a few training sequences (the leverage
	// J_b A J_b^T sets the Newton step and the own leave-out residuals).
	// The complement constant is then chosen for the inverse: Complement
	// + lambda = E|z|^2 / E z^T (C + lambda I)^-1 z over random
	// combinations z of their complement parts (InverseSamples of them),
	// each quadratic form by conjugate gradients preconditioned with the
	// factor itself (a few dozen products each). It overrides Probe.
	// Measured on examples/synthetic (481 parameters, RESULTS.md), it
	// brings the jackknife+ limits of a rank-40 factor within 2% of the
	// interval width of the exact ones, where the Rayleigh quotient of
	// Probe leaves 6% and a coverage 1.3 points lower.
	InverseProbe [][]float64
	// InverseSamples is the number of random combinations of InverseProbe
	// (default 8).
	InverseSamples int
	// Seed makes the start vector, the trace vectors and the subsample
	// reproducible.
	Seed uint64
	// Progress, when set, is called after every curvature-vector product.
	Progress func(done, total int)
}

// LowRank is a low-rank plus constant approximation of a damped
// curvature (C + lambda I):
//
//	C ~= U^T diag(S) U + Rest (I - U^T U),
//
// with the k orthonormal rows of U spanning the Krylov subspace that k
// Lanczos steps on curvature-vector products explore (full
// reorthogonalisation), S the Ritz values (U^T C U restricted to that
// subspace is exact), and Rest the mean eigenvalue of C on the
// complement, trace((I - U^T U) C (I - U^T U)) / (P - k) by Hutchinson's
// estimator on projected vectors. Its solve replaces Rest by Complement
// (Rest, or the Rayleigh quotient of probe vectors, LowRankOptions.Probe):
//
//	(C + lambda I)^-1 b ~= U^T diag(1/(S + lambda)) U b + (b - U^T U b) / (Complement + lambda).
//
// It costs k + TraceSamples (+ probes) curvature-vector products to build and
// O(P k) memory, and a solve costs 2 P k multiply-adds per vector. The
// approximation is exact when k = P; it is good when b lies mostly in the
// top eigen-directions of C or when the damping dominates the rest of the
// spectrum (see benchmarks/scale/RESULTS.md for measured errors).
type LowRank struct {
	// U holds k orthonormal rows of length P, row-major (k×P).
	U []float64
	// S are the Ritz values, one per row of U, in decreasing order.
	S []float64
	// Lambda is the absolute damping, rho trace(C) / P.
	Lambda float64
	// Rest is the mean eigenvalue of C on the complement of U (0 when
	// k = P); RestErr the standard error of its estimate.
	Rest, RestErr float64
	// Complement is the curvature the solve assumes on the complement of
	// U: Rest, or the probes' Rayleigh quotient.
	Complement float64
	// Trace is trace(C) = sum(S) + (P - k) Rest.
	Trace float64
	// Products is the number of curvature-vector products used.
	Products int
	// Drawn lists, in increasing order, the batches the curvature came
	// from when subsampled (nil: all of them), and Scale is W / W_S (1
	// when not subsampled).
	Drawn []int
	Scale float64
	// P is the number of parameters. All fields are plain values, so a
	// LowRank can be stored or sent (e.g. JSON) and used elsewhere.
	P int
}

var _ Factor = (*LowRank)(nil)

// Dim returns the number of parameters P.
func (f *LowRank) Dim() int { return f.P }

// Rank returns k, the number of rows of U.
func (f *LowRank) Rank() int { return len(f.S) }

// NewLowRank builds the low-rank factor of o's curvature at theta by k
// Lanczos steps from a random start vector (see LowRank). It returns an
// error when the context ends or a curvature-vector product fails.
func NewLowRank(ctx context.Context, o *Objective, theta []float64, opt *LowRankOptions) (*LowRank, error) {
	if opt == nil {
		opt = &LowRankOptions{Curvature: GaussNewton}
	}
	P := o.numParams()
	if err := checkLen("theta", theta, P); err != nil {
		return nil, err
	}
	k := opt.Rank
	if k <= 0 {
		k = 100
	}
	k = min(k, P)
	ns := opt.TraceSamples
	if ns <= 0 {
		ns = 16
	}
	if k == P {
		ns = 0
	}
	f := &LowRank{P: P, Scale: 1}
	apply, err := f.curvatureOf(o, opt, theta)
	if err != nil {
		return nil, err
	}
	np := len(opt.Probe)
	if k == P || len(opt.InverseProbe) > 0 {
		np = 0
	}
	ni := 0
	if len(opt.InverseProbe) > 0 && k < P {
		ni = opt.InverseSamples
		if ni <= 0 {
			ni = 8
		}
	}
	total := k + ns + np
	if ni > 0 {
		total += ni * inverseMaxIter // an upper bound
	}
	// products runs the products of several vectors in one pass over
	// the data (ApplyMany); Lanczos takes them one at a time.
	products := func(v, out [][]float64) error {
		if err := apply(ctx, v, out); err != nil {
			return err
		}
		f.Products += len(v)
		if opt.Progress != nil {
			opt.Progress(f.Products, total)
		}
		return nil
	}
	product := func(v, out []float64) error { return products([][]float64{v}, [][]float64{out}) }
	r := rand.New(rand.NewPCG(opt.Seed, 0x6c616e637a6f73))

	// Lanczos with full reorthogonalisation: Q (k×P) orthonormal rows,
	// T = Q C Q^T tridiagonal with diagonal alpha and off-diagonal beta.
	q := make([]float64, k*P)
	alpha := make([]float64, k)
	beta := make([]float64, k) // beta[j] couples rows j and j+1
	w := make([]float64, P)
	randomUnit(r, q[:P], nil)
	scale := 0.0
	for j := 0; j < k; j++ {
		qj := q[j*P : (j+1)*P]
		if err := product(qj, w); err != nil {
			return nil, err
		}
		alpha[j] = num.Dot(qj, w)
		if j+1 == k {
			break
		}
		// Twice is enough (Kahan, Parlett): classical Gram-Schmidt
		// against every row so far, repeated.
		for pass := 0; pass < 2; pass++ {
			orthogonalise(w, q[:(j+1)*P], P)
		}
		next := q[(j+1)*P : (j+2)*P]
		beta[j] = num.Norm(w)
		// The scale of T so far: a breakdown is judged against it, not
		// against alpha[j] alone, which is itself rounding noise once the
		// Krylov space has exhausted C's range (a Gauss-Newton matrix of
		// rank below P: dividing by a beta of that size made garbage).
		scale = math.Max(scale, math.Abs(alpha[j])+beta[j])
		if beta[j] <= 1e-10*scale || beta[j] == 0 {
			// An invariant subspace: restart in a fresh direction
			// orthogonal to it (T stays block diagonal).
			beta[j] = 0
			randomUnit(r, next, q[:(j+1)*P])
			continue
		}
		for i, v := range w {
			next[i] = v / beta[j]
		}
	}
	vals, z, ok := TridiagonalEigen(alpha, beta)
	if !ok {
		return nil, fmt.Errorf("hvp: eigendecomposition of the %d×%d Lanczos matrix failed", k, k)
	}
	// Decreasing order; U = Z^T Q row by row.
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return vals[order[a]] > vals[order[b]] })
	zt := make([]float64, k*k) // zt[i][j] = Z[j][order[i]]: row i of Z^T, reordered
	for i, c := range order {
		for j := 0; j < k; j++ {
			zt[i*k+j] = z.At(j, c)
		}
	}
	f.U = rotateRows(zt, q, k, P, 8*len(q) > inPlaceBytes)
	q = nil
	f.S = make([]float64, k)
	for i, c := range order {
		f.S[i] = vals[c]
	}

	// The complement's mean eigenvalue by Hutchinson on projected
	// Rademacher vectors: E[z'^T C z'] = trace((I - U^T U) C (I - U^T U)).
	if ns > 0 {
		mean, se, err := hutchinson(P, ns, r, func(z []float64) { orthogonalise(z, f.U, P) }, products)
		if err != nil {
			return nil, err
		}
		f.Rest, f.RestErr = math.Max(mean/float64(P-k), 0), se/float64(P-k)
	}
	f.Complement = f.Rest
	if np > 0 {
		var numer, den float64
		bp := make([][]float64, np)
		cb := make([][]float64, np)
		for j, b := range opt.Probe {
			if err := checkLen(fmt.Sprintf("probe %d", j), b, P); err != nil {
				return nil, err
			}
			bp[j], cb[j] = slices.Clone(b), make([]float64, P)
			orthogonalise(bp[j], f.U, P)
		}
		if err := products(bp, cb); err != nil {
			return nil, err
		}
		for j := range bp {
			numer += num.Dot(bp[j], cb[j])
			den += num.Dot(bp[j], bp[j])
		}
		if den > 0 && numer > 0 {
			f.Complement = numer / den
		}
	}
	f.Trace = float64(P-k) * f.Rest
	for _, s := range f.S {
		f.Trace += s
	}
	rho := opt.Damping
	if rho == 0 {
		rho = DefaultDamping
	}
	f.Lambda = math.Abs(math.Max(rho, 0) * f.Trace / float64(P))
	if ni > 0 {
		c, err := f.inverseComplement(ctx, opt.InverseProbe, ni, r, products)
		if err != nil {
			return nil, err
		}
		f.Complement = c
	}
	return f, nil
}

// inPlaceBytes is the size of the Lanczos vectors (k×P floats) above
// which NewLowRank has rotateRows form U in their place, panel by panel, instead of
// beside them: at 794,881 parameters and rank 200 the two were 2.5 GB.
const inPlaceBytes = 256 << 20

// rotatePanel is the columns of one panel of rotateRows.
const rotatePanel = 2048

// rotateRows returns zt q (k×k times k×P, row-major): the rows of U from
// the Lanczos vectors q. inPlace overwrites q, a panel of rotatePanel
// columns at a time (two panels of k×rotatePanel floats beside it), and
// returns it; otherwise one product into a new slice (the bundled
// examples' factors, whose bytes stay as they were).
func rotateRows(zt, q []float64, k, P int, inPlace bool) []float64 {
	if !inPlace {
		u := make([]float64, k*P)
		graph.MatMul(false, false, k, P, k, zt, q, u)
		return u
	}
	in := make([]float64, k*rotatePanel)
	out := make([]float64, k*rotatePanel)
	for p0 := 0; p0 < P; p0 += rotatePanel {
		w := min(rotatePanel, P-p0)
		for i := 0; i < k; i++ {
			copy(in[i*w:(i+1)*w], q[i*P+p0:i*P+p0+w])
		}
		graph.MatMul(false, false, k, w, k, zt, in[:k*w], out[:k*w])
		for i := 0; i < k; i++ {
			copy(q[i*P+p0:i*P+p0+w], out[i*w:(i+1)*w])
		}
	}
	return q
}

// inverseMaxIter and inverseTol bound the conjugate-gradient iterations
// of one quadratic form of LowRankOptions.InverseProbe: it stops when an
// iteration changes the form by less than inverseTol of itself (the
// forms increase to their limit: CG's Gauss quadrature).
const (
	inverseMaxIter = 200
	inverseTol     = 1e-4
)

// inverseComplement returns the complement constant c of
// LowRankOptions.InverseProbe: c + lambda = sum |z|^2 / sum z^T (C +
// lambda I)^-1 z over n Rademacher combinations z of the probes'
// complement parts, the quadratic forms by f's preconditioned CG (pcg)
// on product (C's curvature-vector product).
func (f *LowRank) inverseComplement(ctx context.Context, probes [][]float64, n int, r *rand.Rand, product func(v, out [][]float64) error) (float64, error) {
	P := f.P
	for j, b := range probes {
		if err := checkLen(fmt.Sprintf("inverse probe %d", j), b, P); err != nil {
			return 0, err
		}
	}
	// The n combinations side by side: their products share the passes
	// over the data.
	z := make([][]float64, n)
	x := make([][]float64, n)
	var numer, den float64
	for s := range z {
		z[s], x[s] = make([]float64, P), make([]float64, P)
		for _, b := range probes {
			addScaled(z[s], b, float64(2*r.IntN(2)-1))
		}
		orthogonalise(z[s], f.U, P)
		orthogonalise(z[s], f.U, P)
		numer += num.Dot(z[s], z[s])
	}
	// The forms z^T x: each stops when an iteration changes it by less
	// than inverseTol of itself.
	form := make([]float64, n)
	_, err := f.pcg(ctx, product, x, z, inverseMaxIter, func(s int, x, _ []float64) bool {
		next := num.Dot(z[s], x)
		done := math.Abs(next-form[s]) <= inverseTol*math.Abs(next)
		form[s] = next
		return done
	})
	if err != nil {
		return 0, err
	}
	for _, v := range form {
		den += v
	}
	if den <= 0 || numer <= 0 {
		return f.Complement, nil
	}
	return math.Max(numer/den-f.Lambda, 0), nil
}

// pcg runs conjugate gradients on (C + lambda I) x[j] = b[j] from x[j] =
// 0 for every j side by side, C's products given by product (those of
// all the unfinished columns in one call, sharing a pass over the data), each
// preconditioned by f's own solve (the low-rank approximation of the
// inverse; its preconditioner solves of all the unfinished columns are
// one SolveAll). done(j, x[j], r[j]) is asked after every update of
// column j, r[j] its residual b[j] - (C + lambda I) x[j]: true ends that
// column, as do maxIter iterations and a vanishing preconditioned
// residual. It returns the number of curvature-vector products taken.
// x[j] must have length P; b is not changed.
func (f *LowRank) pcg(ctx context.Context, product func(v, out [][]float64) error, x, b [][]float64, maxIter int, done func(j int, x, r []float64) bool) (int, error) {
	P, nb := f.P, len(b)
	pre := *f
	if pre.Complement+pre.Lambda <= 0 {
		pre.Complement = math.Max(pre.Rest, pre.Lambda)
	}
	res := make([][]float64, nb)
	dir := make([][]float64, nb)
	ad := make([][]float64, nb)
	for j := range ad {
		ad[j] = make([]float64, P)
	}
	rz := make([]float64, nb)
	for j := range b {
		clear(x[j])
		res[j] = slices.Clone(b[j])
	}
	pz := make([][]float64, nb)
	if err := pre.SolveAll(ctx, pz, res); err != nil {
		return 0, err
	}
	active := make([]int, 0, nb)
	for j := range b {
		dir[j] = slices.Clone(pz[j])
		rz[j] = num.Dot(res[j], pz[j])
		if rz[j] > 0 {
			active = append(active, j)
		}
	}
	products := 0
	for it := 0; it < maxIter && len(active) > 0; it++ {
		next := active[:0:0]
		dirs, ads := make([][]float64, len(active)), make([][]float64, len(active))
		for a, j := range active {
			dirs[a], ads[a] = dir[j], ad[j]
		}
		if err := product(dirs, ads); err != nil {
			return products, err
		}
		products += len(active)
		for _, j := range active {
			addScaled(ad[j], dir[j], f.Lambda)
			alpha := rz[j] / num.Dot(dir[j], ad[j])
			addScaled(x[j], dir[j], alpha)
			addScaled(res[j], ad[j], -alpha)
			if !done(j, x[j], res[j]) {
				next = append(next, j)
			}
		}
		active = next
		if len(active) == 0 || it+1 == maxIter {
			break
		}
		rs := make([][]float64, len(active))
		ps := make([][]float64, len(active))
		for a, j := range active {
			rs[a], ps[a] = res[j], pz[j]
		}
		if err := pre.SolveAll(ctx, ps, rs); err != nil {
			return products, err
		}
		next = active[:0:0]
		for _, j := range active {
			rzNew := num.Dot(res[j], pz[j])
			beta := rzNew / rz[j]
			rz[j] = rzNew
			for i := range dir[j] {
				dir[j][i] = pz[j][i] + beta*dir[j][i]
			}
			if rzNew > 0 {
				next = append(next, j)
			}
		}
		active = next
	}
	return products, nil
}

// Operator returns the curvature-vector product the factor approximates
// (without the damping lambda): o's curvature c at theta, or, when the
// factor was built on a subsample (Drawn), the drawn batches' scaled by
// Scale plus o's ridge. o, c and theta must be the ones NewLowRank was
// given. It returns an error when theta has the wrong length or Drawn
// names a batch o does not have.
func (f *LowRank) Operator(o *Objective, c Curvature, theta []float64) (func(ctx context.Context, v, out []float64) error, error) {
	many, err := f.OperatorMany(o, c, theta)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, v, out []float64) error {
		return many(ctx, [][]float64{v}, [][]float64{out})
	}, nil
}

// ProductMany writes the curvature-vector products of all the vectors v
// into out, in one pass over the data (Objective.ApplyMany).
type ProductMany func(ctx context.Context, v, out [][]float64) error

// OperatorMany is Operator for many vectors at once: each batch's
// forward pass is shared by all of them (SolvePCGMany).
func (f *LowRank) OperatorMany(o *Objective, c Curvature, theta []float64) (ProductMany, error) {
	if err := checkLen("theta", theta, f.P); err != nil {
		return nil, err
	}
	return f.product(o, c, theta)
}

// SolvePCG sets x[j] to (C + lambda I)^-1 b[j] to a relative residual
// |b[j] - (C + lambda I) x[j]| <= tol |b[j]| (or maxIter iterations) by
// conjugate gradients on the curvature apply (Operator), preconditioned
// by the factor: the accurate solve where the low-rank one is not good
// enough, at one curvature-vector product per vector and iteration. A
// nil x[j] is allocated. It returns the products taken and the largest
// relative residual left; an error when the lengths are wrong, the
// context ends or a product fails.
func (f *LowRank) SolvePCG(ctx context.Context, apply func(ctx context.Context, v, out []float64) error, x, b [][]float64, tol float64, maxIter int) (products int, residual float64, err error) {
	return f.SolvePCGMany(ctx, func(ctx context.Context, v, out [][]float64) error {
		for j := range v {
			if err := apply(ctx, v[j], out[j]); err != nil {
				return err
			}
		}
		return nil
	}, x, b, tol, maxIter)
}

// SolvePCGMany is SolvePCG with the products of all the unfinished
// vectors of an iteration in one call (OperatorMany), which shares each
// batch's forward pass among them. Its results are SolvePCG's, bit for
// bit.
func (f *LowRank) SolvePCGMany(ctx context.Context, apply ProductMany, x, b [][]float64, tol float64, maxIter int) (products int, residual float64, err error) {
	if err := checkSolveArgs(f.P, x, b); err != nil {
		return 0, 0, err
	}
	sol := make([][]float64, len(b))
	bn := make([]float64, len(b))
	rel := make([]float64, len(b))
	for j := range b {
		sol[j] = make([]float64, f.P)
		bn[j] = num.Norm(b[j])
		rel[j] = 1
		if bn[j] == 0 {
			rel[j] = 0
		}
	}
	products, err = f.pcg(ctx, func(v, out [][]float64) error { return apply(ctx, v, out) }, sol, b, maxIter, func(j int, _, r []float64) bool {
		rel[j] = num.Norm(r) / bn[j]
		return rel[j] <= tol
	})
	if err != nil {
		return products, 0, err
	}
	for j := range b {
		if x[j] == nil {
			x[j] = make([]float64, f.P)
		}
		copy(x[j], sol[j])
		residual = math.Max(residual, rel[j])
	}
	return products, residual, nil
}

func addScaled(dst, src []float64, a float64) {
	for i, v := range src {
		dst[i] += a * v
	}
}

// curvatureOf returns the curvature-vector product NewLowRank uses: o's
// own, or a subsample's scaled to the whole (LowRankOptions.Subsample).
func (f *LowRank) curvatureOf(o *Objective, opt *LowRankOptions, theta []float64) (ProductMany, error) {
	n := len(o.Batches)
	if opt.Subsample <= 0 || opt.Subsample >= n {
		return o.atPoint(opt.Curvature, theta), nil
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x73756273616d706c))
	pick := r.Perm(n)[:opt.Subsample]
	slices.Sort(pick)
	var wAll, wSub float64
	for i := range o.Batches {
		for _, v := range o.Batches[i].Weight {
			wAll += v
		}
	}
	for _, i := range pick {
		for _, v := range o.Batches[i].Weight {
			wSub += v
		}
	}
	if wSub <= 0 {
		return nil, errs.Fix([]Option{OptSubsample}, "hvp: the %d sampled batches have no loss weight", opt.Subsample)
	}
	f.Drawn, f.Scale = pick, wAll/wSub
	return f.product(o, opt.Curvature, theta)
}

// product is the curvature-vector product of o that f's Drawn and Scale
// name, curvature c at theta, for many vectors at once: o's own when
// Drawn is nil, else the drawn batches' scaled by Scale plus o's ridge.
// Each batch's forward pass is run once and kept (Objective.atPoint).
func (f *LowRank) product(o *Objective, c Curvature, theta []float64) (ProductMany, error) {
	if f.Drawn == nil {
		return o.atPoint(c, theta), nil
	}
	sub := &Objective{Loss: o.Loss, Workers: o.Workers}
	for _, i := range f.Drawn {
		if i < 0 || i >= len(o.Batches) {
			return nil, fmt.Errorf("hvp: the factor's drawn batch %d is not among the %d batches", i, len(o.Batches))
		}
		sub.Batches = append(sub.Batches, o.Batches[i])
	}
	ridge, scale := o.Ridge, f.Scale
	apply := sub.atPoint(c, theta)
	return func(ctx context.Context, v, out [][]float64) error {
		if err := apply(ctx, v, out); err != nil {
			return err
		}
		for j := range out {
			for i := range out[j] {
				out[j][i] = scale*out[j][i] + ridge*v[j][i]
			}
		}
		return nil
	}, nil
}

// randomUnit fills v with a Gaussian vector orthogonalised against the
// rows of q (length a multiple of len(v)) and normalised.
func randomUnit(r *rand.Rand, v, q []float64) {
	for {
		for i := range v {
			v[i] = r.NormFloat64()
		}
		orthogonalise(v, q, len(v))
		orthogonalise(v, q, len(v))
		if n := num.Norm(v); n > 1e-8 {
			for i := range v {
				v[i] /= n
			}
			return
		}
	}
}

// orthogonalise removes from v its components along the rows of q (k×P,
// orthonormal): v -= q^T (q v).
func orthogonalise(v, q []float64, P int) {
	k := len(q) / P
	if k == 0 {
		return
	}
	c := make([]float64, k)
	graph.MatMul(false, false, k, 1, P, q, v, c)
	for j, cj := range c {
		row := q[j*P : (j+1)*P]
		for i, u := range row {
			v[i] -= cj * u
		}
	}
}

// solveChunk is the number of right-hand sides SolveAll treats in one
// matrix product.
const solveChunk = 64

// packChunks calls f on the right-hand sides b solveChunk at a time, each
// chunk first copied row by row into bt (nb×P, row-major), and checks ctx
// between chunks: the loop every batched solve shares.
func packChunks(ctx context.Context, b [][]float64, P int, bt []float64, f func(lo, nb int) error) error {
	for lo := 0; lo < len(b); lo += solveChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		nb := min(solveChunk, len(b)-lo)
		for j := range nb {
			copy(bt[j*P:], b[lo+j])
		}
		if err := f(lo, nb); err != nil {
			return err
		}
	}
	return nil
}

// SolveAll sets x[j] = U^T diag(1/(S + lambda)) U b[j] + (b[j] - U^T U b[j]) / (Complement + lambda)
// for every j: the low-rank approximation of (C + lambda I)^-1 b[j]. A
// nil x[j] is allocated; x[j] may be b[j] (solved in place). It returns
// an error when len(x) != len(b) or a vector's length is not Dim(), when
// the context ends or the complement's damped curvature
// Complement + lambda is 0 (no damping and a flat complement).
func (f *LowRank) SolveAll(ctx context.Context, x, b [][]float64) error {
	if err := checkSolveArgs(f.P, x, b); err != nil {
		return err
	}
	P, k := f.P, len(f.S)
	r, err := f.Reduce()
	if err != nil {
		return err
	}
	d, inv := r.D, r.Inv
	// Scratch for the largest chunk only: the PCG solves call SolveAll
	// with a few vectors hundreds of times.
	nc := min(solveChunk, len(b))
	bt := make([]float64, nc*P)
	ct := make([]float64, k*nc)
	xt := make([]float64, nc*P)
	return packChunks(ctx, b, P, bt, func(lo, nb int) error {
		hi := lo + nb
		// C^T = U B^T (k×nb), scaled row by row, then X = C U + B / lc.
		graph.MatMul(false, true, k, nb, P, f.U, bt[:nb*P], ct[:k*nb])
		for i := 0; i < k; i++ {
			row := ct[i*nb : (i+1)*nb]
			for j := range row {
				row[j] *= d[i]
			}
		}
		graph.MatMul(true, false, nb, P, k, ct[:k*nb], f.U, xt[:nb*P])
		for j := lo; j < hi; j++ {
			if x[j] == nil {
				x[j] = make([]float64, P)
			}
			src, dst := xt[(j-lo)*P:(j-lo+1)*P], x[j]
			bj := bt[(j-lo)*P : (j-lo+1)*P]
			for i := range dst {
				dst[i] = src[i] + inv*bj[i]
			}
		}
		return nil
	})
}

// Reduced is the LowRank solve x = A b, A = U^T diag(D) U + Inv I (the
// approximate (C + lambda I)^-1), seen in the coordinates of U: with U's
// rows orthonormal, U A b = diag(D + Inv) U b, so the figures below need
// only U b (k numbers) and inner products in parameter space, never a
// P-vector x. A pass over many vectors then costs one k×P matrix product
// with all of them instead of two per SolveAll (package audit's block
// pass).
type Reduced struct {
	// D is, per row of U, 1/(S_i + lambda) - Inv.
	D []float64
	// Inv is 1/(Complement + lambda), the solve on the complement of U
	// (0 when k = P).
	Inv float64
}

// Reduce returns f's solve in U's coordinates (Reduced). It returns the
// errors of SolveAll for a curvature the solve cannot invert.
func (f *LowRank) Reduce() (Reduced, error) {
	P, k := f.P, len(f.S)
	lc := f.Complement + f.Lambda
	if lc <= 0 && k < P {
		return Reduced{}, errs.Fix([]Option{OptDamping}, "%w: the complement of the rank-%d subspace has curvature %.4g + lambda %.4g", ErrIndefinite, k, f.Complement, f.Lambda)
	}
	// Coefficient d_i on row i of U: 1/(S_i + lambda) - 1/lc, so that
	// x = b/lc + U^T (d ⊙ U b).
	r := Reduced{D: make([]float64, k)}
	if k < P {
		r.Inv = 1 / lc
	}
	for i, s := range f.S {
		if s+f.Lambda <= 0 {
			return Reduced{}, errs.Fix([]Option{OptCurvature, OptDamping}, "%w: Ritz value %.4g + lambda %.4g is not positive", ErrIndefinite, s, f.Lambda)
		}
		r.D[i] = 1/(s+f.Lambda) - r.Inv
	}
	return r, nil
}

// Top sets dst (k numbers) to U A b from ub = U b: diag(D + Inv) ub. It
// returns dst.
func (r Reduced) Top(dst, ub []float64) []float64 {
	for i, d := range r.D {
		dst[i] = (d + r.Inv) * ub[i]
	}
	return dst
}

// Form returns a^T A b from ua = U a, ub = U b and ab = a·b:
// sum_i D_i ua_i ub_i + Inv ab.
func (r Reduced) Form(ua, ub []float64, ab float64) float64 {
	s := 0.0
	for i, d := range r.D {
		s += d * ua[i] * ub[i]
	}
	return s + r.Inv*ab
}

// Norm2 returns |A b|^2 from ub = U b and bb = |b|^2: the part in U,
// sum_i ((D_i + Inv) ub_i)^2, plus the complement's, Inv^2 (|b|^2 -
// |U b|^2) (at least 0).
func (r Reduced) Norm2(ub []float64, bb float64) float64 {
	top, in := 0.0, 0.0
	for i, d := range r.D {
		v := (d + r.Inv) * ub[i]
		top += v * v
		in += ub[i] * ub[i]
	}
	return top + r.Inv*r.Inv*max(bb-in, 0)
}
