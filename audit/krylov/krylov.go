// Package krylov solves the leverage system of one block of a Newton
// step by the Lanczos process, from products with the block's Jacobian
// rows, without forming its m × m leverage matrix: the path of blocks
// with many loss terms (an interval block has one per sequence and step
// of its interval, N·K; a nested block its sequence's and its
// interval's). It is plain linear algebra over rows of floats; which
// blocks take it, their terms and curvature, and what the solution
// means (the step, the own residuals, the judgement of an unbounded
// block) are package audit's (docs/design.md, the Newton estimator).
//
// The dense path forms K = J A J^T (m² dot products of length P) and
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
// (K symmetrised as the dense path's is, for solvers whose A is not
// exactly symmetric), so Solve runs the Lanczos process on S from b =
// Lambda^1/2 J u, with full reorthogonalisation, and from its
// tridiagonal T_k reads both what the dense path reads from the
// eigendecomposition:
//
//   - the unbounded-block test: the largest Ritz value of T_k never
//     exceeds S's largest eigenvalue (interlacing), so a Ritz value above
//     1 - limit proves the block unbounded; when the largest Ritz pair
//     has converged (its residual below EigTol) and stays below, the
//     block is bounded;
//   - the step: y = (I - S)^-1 b from the Galerkin solution |b| Q_k (I -
//     T_k)^-1 e_1, the conjugate-gradient iterate, whose residual is
//     beta_k |y_k| (relative SolveTol).
//
// When the Krylov space of b closes (beta_k = 0: b lies in an invariant
// subspace of S) before the largest eigenvalue is known, the process goes
// on from a fixed pseudo-random vector orthogonal to Q_k, so that the
// leverage test covers the whole block. Each step costs 4 m P for the
// product and 2 k m for the reorthogonalisation; it ends after at most
// maxSteps steps (or m, or maxFloats / m), and a solve whose step or
// leverage has not converged by then keeps the last iterate and says so
// (Solution.Converged).
package krylov

import (
	"math"
	"math/rand/v2"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// The Lanczos process's tolerances and caps.
const (
	// SolveTol is the relative residual |(I - S) y - b| / |b| at which
	// the step has converged.
	SolveTol = 1e-10
	// EigTol is the residual at which the largest Ritz pair has
	// converged, and with it the unbounded-block test.
	EigTol     = 1e-8
	maxSteps   = 400
	maxFloats  = 1 << 24 // the Lanczos basis: 128 MB a block
	checkEvery = 8       // steps between looks at T_k
)

// Operator is a block's leverage matrix S = Lambda^1/2 K Lambda^1/2, K =
// (J A J^T + (A J^T)^T J^T)/2, applied from the block's rows J and AJ =
// A J^T and the square roots sl of its terms' curvatures Lambda: S's
// products without S.
type Operator struct {
	J, AJ [][]float64
	sl    []float64
	w1    []float64 // P-vector scratch
	w2    []float64
}

// NewOperator returns the Operator of the rows J and AJ (one per term)
// and the curvatures' square roots sl.
func NewOperator(J, AJ [][]float64, sl []float64) *Operator {
	P := 0
	if len(J) > 0 {
		P = len(J[0])
	}
	return &Operator{J: J, AJ: AJ, sl: sl, w1: make([]float64, P), w2: make([]float64, P)}
}

// ApplyK sets dst = K x: a caller reads the linearised model's change
// J delta = J u + K z from it.
func (o *Operator) ApplyK(dst, x []float64) {
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
func (o *Operator) apply(dst, x, tmp []float64) {
	for a, v := range x {
		tmp[a] = o.sl[a] * v
	}
	o.ApplyK(dst, tmp)
	for a := range dst {
		dst[a] *= o.sl[a]
	}
}

// Solution is what Solve reads from the Lanczos process.
type Solution struct {
	// Z is Lambda^1/2 (I - S)^-1 b, the step's coefficients on the rows
	// AJ (delta = u + A J^T Z); nil when Unbounded.
	Z []float64
	// LevMax is the largest Ritz value of S at the last look, a lower
	// bound on its largest eigenvalue, the eigenvalue itself once
	// converged.
	LevMax float64
	// Unbounded says that a Ritz value came within limit of 1.
	Unbounded bool
	// Converged says that the step and the largest eigenvalue reached
	// SolveTol and EigTol before the step cap; if not, Z is the last
	// iterate.
	Converged bool
}

// Solve solves (I - S) y = b for the leverage matrix S of op (b =
// Lambda^1/2 J u, one entry per term) by the Lanczos process, and tests
// whether S has an eigenvalue within limit of 1 (see the package
// comment). It never fails.
func Solve(op *Operator, b []float64, limit float64) Solution {
	var sol Solution
	m := len(b)
	bnorm := num.Norm(b)
	steps := min(m, maxSteps, max(2, maxFloats/max(m, 1)))

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
		if n%checkEvery != 0 && !closed && n < steps {
			// The tridiagonal's eigendecomposition costs n³: look at
			// it every checkEvery steps.
			next()
			continue
		}

		// Ritz values and the Galerkin solve on T_k.
		vals, V, ok := hvp.TridiagonalEigen(alpha[:n], beta)
		if !ok {
			break
		}
		top := vals[n-1]
		sol.LevMax = top
		if top > 1-limit || math.IsNaN(top) {
			sol.Unbounded = true
			return sol
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
		if known || n == m || (!closed && eigRes <= EigTol && solveRes <= SolveTol*bnorm) {
			converged = true
			break
		}
		next()
	}
	sol.Converged = converged
	// z = Lambda^1/2 Q y.
	z := make([]float64, m)
	for j, c := range y {
		num.AddScaled(z, c, Q[j])
	}
	for a := range z {
		z[a] *= op.sl[a]
	}
	sol.Z = z
	return sol
}
