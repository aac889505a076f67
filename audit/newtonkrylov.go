package audit

import (
	"math"
	"math/rand/v2"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// The Newton step of a block with many loss terms (an interval block has
// one per sequence and step of its interval, N·K; a nested block its
// sequence's and its interval's), without the m × m leverage matrix.
//
// newtonReduced forms K = J A J^T (m² dot products of length P) and
// eigendecomposes S = Lambda^1/2 K Lambda^1/2 (m³), which is right for a
// sequence's few hundred terms and out of reach for an interval block of
// 100 sequences × 12 steps (1,200 terms: 1.4 billion multiply-adds for K
// at P = 1,000, 1.7 billion for the eigendecomposition, per block) or a
// nested block, of which there are N·J. The step only needs products
// with S, each of which costs two passes over the block's Jacobian rows
// J and A J^T (4 m P multiply-adds):
//
//	S x = Lambda^1/2 K Lambda^1/2 x,  K x = (J (A J^T x) + A J^T (J^T x)) / 2
//
// (K symmetrised as newtonStep's is, for solvers whose A is not exactly
// symmetric),
// so newtonKrylov runs the Lanczos process on S from b = Lambda^1/2 J u,
// with full reorthogonalisation, and from its tridiagonal T_k reads both
// what the dense path reads from the eigendecomposition:
//
//   - the unbounded-block test: the largest Ritz value of T_k never
//     exceeds S's largest eigenvalue (interlacing), so a Ritz value above
//     1 - leverageLimit proves the block unbounded; when the largest Ritz
//     pair has converged (its residual below krylovEigTol) and stays
//     below, the block is bounded;
//   - the step: y = (I - S)^-1 b from the Galerkin solution |b| Q_k (I -
//     T_k)^-1 e_1, the conjugate-gradient iterate, whose residual is
//     beta_k |y_k| (relative krylovSolveTol).
//
// When the Krylov space of b closes (beta_k = 0: b lies in an invariant
// subspace of S) before the largest eigenvalue is known, the process goes
// on from a fixed pseudo-random vector orthogonal to Q_k, so that the
// leverage test covers the whole block. Each step costs 4 m P for the
// product and 2 k m for the reorthogonalisation; it ends after at most
// krylovMaxSteps steps (or m, or krylovMaxFloats / m), and a block whose
// step or leverage has not converged by then keeps the last iterate and
// is counted (blockStep.approx).
const (
	krylovSolveTol  = 1e-10
	krylovEigTol    = 1e-8
	krylovMaxSteps  = 400
	krylovMaxFloats = 1 << 24 // the Lanczos basis: 128 MB a block
	krylovCheck     = 8       // steps between looks at T_k
)

// sOperator is a block's leverage matrix S = Lambda^1/2 K Lambda^1/2, K =
// (J A J^T + (A J^T)^T J^T)/2 applied from the block's rows J and AJ.
type sOperator struct {
	J, AJ [][]float64
	sl    []float64
	w1    []float64 // P-vector scratch
	w2    []float64
}

func newSOperator(J, AJ [][]float64, sl []float64) *sOperator {
	P := 0
	if len(J) > 0 {
		P = len(J[0])
	}
	return &sOperator{J: J, AJ: AJ, sl: sl, w1: make([]float64, P), w2: make([]float64, P)}
}

// applyK sets dst = K x.
func (o *sOperator) applyK(dst, x []float64) {
	clear(o.w1)
	clear(o.w2)
	for c, xc := range x {
		if xc != 0 {
			num.AddScaled(o.w1, xc, o.AJ[c])
			num.AddScaled(o.w2, xc, o.J[c])
		}
	}
	for a := range dst {
		dst[a] = (num.Dot(o.J[a], o.w1) + num.Dot(o.AJ[a], o.w2)) / 2
	}
}

// apply sets dst = S x, using tmp (length m) as scratch.
func (o *sOperator) apply(dst, x, tmp []float64) {
	for a, v := range x {
		tmp[a] = o.sl[a] * v
	}
	o.applyK(dst, tmp)
	for a := range dst {
		dst[a] *= o.sl[a]
	}
}

// newtonKrylov is newtonStep for a block with many terms (see the comment
// above krylovSolveTol): the same blockStep from the block's terms ts,
// Jacobian rows J, rows AJ = A J^T and infinitesimal step u, with S
// applied as products. It never fails.
func newtonKrylov(loss hvp.Loss, ts []ownTerm, J, AJ [][]float64, u []float64) blockStep {
	m := len(ts)
	st := blockStep{delta: u, res: make([]float64, m), shift: make([]float64, m), lev: make([]float64, m)}
	sl := make([]float64, m)
	v := make([]float64, m)
	b := make([]float64, m)
	for a, t := range ts {
		sl[a] = math.Sqrt(t.w * loss.SecondDerivative(t.y, t.fx))
		v[a] = num.Dot(J[a], u)
		b[a] = sl[a] * v[a]
		st.lev[a] = sl[a] * sl[a] * num.Dot(J[a], AJ[a])
		if math.IsNaN(st.lev[a]) || math.IsInf(st.lev[a], 0) || math.IsNaN(b[a]) || math.IsInf(b[a], 0) {
			// As in newtonReduced: an indefinite or singular curvature
			// made the leverage overflow.
			st.levMax, st.lev, st.unbounded = math.Inf(1), nil, true
			for a := range st.res {
				st.res[a] = math.Inf(1)
			}
			return st
		}
	}
	op := newSOperator(J, AJ, sl)
	bnorm := num.Norm(b)
	steps := min(m, krylovMaxSteps, max(2, krylovMaxFloats/max(m, 1)))

	// Lanczos with full reorthogonalisation: S Q = Q T + beta q e_k^T.
	var Q [][]float64
	var alpha, beta []float64 // T's diagonal and off-diagonal (beta[j] links j, j+1)
	rnd := rand.New(rand.NewPCG(uint64(m), 0x6c616e637a6f73))
	start := func() []float64 {
		// A fixed pseudo-random unit vector orthogonal to Q.
		q := make([]float64, m)
		for a := range q {
			q[a] = rnd.NormFloat64()
		}
		for range 2 {
			for _, p := range Q {
				num.AddScaled(q, -num.Dot(q, p), p)
			}
		}
		if n := num.Norm(q); n > 0 {
			num.Scale(q, 1/n)
			return q
		}
		return nil
	}
	var q []float64
	if bnorm > 0 {
		q = append([]float64(nil), b...)
		num.Scale(q, 1/bnorm)
	} else {
		q = start()
	}
	w := make([]float64, m)
	tmp := make([]float64, m)
	var y []float64 // (I - T)^-1 e_1 |b| in Q's coordinates
	converged := false
	restart := -1 // the step of the last restart
	for k := 0; k < steps && q != nil; k++ {
		Q = append(Q, q)
		op.apply(w, q, tmp)
		if k > 0 {
			num.AddScaled(w, -beta[k-1], Q[k-1])
		}
		a := num.Dot(q, w)
		alpha = append(alpha, a)
		num.AddScaled(w, -a, q)
		for range 2 {
			for _, p := range Q {
				num.AddScaled(w, -num.Dot(w, p), p)
			}
		}
		bk := num.Norm(w)
		closed := bk <= 1e-12*math.Max(1, math.Abs(a))
		if closed {
			bk = 0
		}
		beta = append(beta, bk)
		// Closed at the first step from a restart: the random vector
		// orthogonal to the invariant subspace span Q_k-1 is itself an
		// eigenvector, so (almost surely) S is alpha_k I on all of that
		// subspace's complement and the spectrum is known.
		known := closed && restart == k
		next := func() {
			if closed {
				q, restart = start(), k+1
				return
			}
			q = append([]float64(nil), w...)
			num.Scale(q, 1/bk)
		}
		n := k + 1
		if n%krylovCheck != 0 && !closed && n < steps {
			// The tridiagonal's eigendecomposition costs n³: look at
			// it every krylovCheck steps.
			next()
			continue
		}

		// Ritz values and the Galerkin solve on T_k.
		vals, V, ok := hvp.TridiagonalEigen(alpha[:n], beta)
		if !ok {
			break
		}
		top := vals[n-1]
		st.levMax = top
		if top > 1-leverageLimit || math.IsNaN(top) {
			st.unbounded = true
			for a := range st.res {
				st.res[a] = math.Inf(1)
			}
			return st
		}
		// y = V (I - diag vals)^-1 V^T e_1 |b|: only the first Krylov
		// block (started from b) carries b; the restarted ones do not.
		y = make([]float64, n)
		if bnorm > 0 {
			for e := 0; e < n; e++ {
				c := V.At(0, e) * bnorm / (1 - vals[e])
				for j := 0; j < n; j++ {
					y[j] += V.At(j, e) * c
				}
			}
		}
		eigRes := bk * math.Abs(V.At(n-1, n-1))
		solveRes := bk * math.Abs(y[n-1])
		if known || n == m || (!closed && eigRes <= krylovEigTol && solveRes <= krylovSolveTol*bnorm) {
			converged = true
			break
		}
		next()
	}
	st.approx = !converged
	// z = Lambda^1/2 Q y; delta = u + A J^T z; J delta = v + K z.
	z := make([]float64, m)
	for j, c := range y {
		num.AddScaled(z, c, Q[j])
	}
	for a := range z {
		z[a] *= sl[a]
	}
	delta := append([]float64(nil), u...)
	for c, zc := range z {
		if zc != 0 {
			num.AddScaled(delta, zc, AJ[c])
		}
	}
	st.delta = delta
	kz := make([]float64, m)
	op.applyK(kz, z)
	for a, t := range ts {
		jd := v[a] + kz[a]
		st.res[a] = math.Abs(t.y - t.fx - jd)
		st.shift[a] = math.Abs(jd)
	}
	return st
}
