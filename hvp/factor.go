package hvp

import "context"

// Factor applies the inverse of a damped curvature, (C + lambda I)^-1, to
// many vectors, however it is represented: the exact eigendecomposition, a
// Krylov solver, or a low-rank approximation (LowRank). The audit's
// influence estimator consumes it.
type Factor interface {
	// Dim is the number of parameters P.
	Dim() int
	// SolveAll sets x[j] = (C + lambda I)^-1 b[j] for every j.
	SolveAll(ctx context.Context, x, b [][]float64) error
}
