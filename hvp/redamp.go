package hvp

import (
	"context"
	"fmt"
)

// redamper is a factor that can be re-damped from what it keeps: the
// exact method's dense curvature and eigenvalues (one more P×P inverse)
// and the dual method's Jacobian rows and kernel eigenvalues (one more
// kernel product and Cholesky factorisation).
type redamper interface {
	// redamp returns the factor of the same curvature at rep.Lambda,
	// recording in rep what the method records (eigenvalues below
	// -lambda).
	redamp(ctx context.Context, rep *Report) (factor, error)
}

// Redamp returns the factorisation of the same curvature at the relative
// damping rho (lambda = rho |trace(C)| / P, docs/design.md, section 4.3), and
// its report, without forming or decomposing the curvature again: a
// damping-sensitivity check then costs the solves, not the
// factorisation. Its solves are the same, bit for bit, as those of
// Factorize called with Damping rho (the factorisation is
// deterministic). Only the Exact and Dual methods can be re-damped; the
// others return an error. The receiver is not modified.
func (f *Factorization) Redamp(ctx context.Context, rho float64) (*Factorization, *Report, error) {
	r, ok := f.f.(redamper)
	if !ok {
		return nil, nil, fmt.Errorf("hvp: the %s method's factor cannot be re-damped", f.rep.Method)
	}
	if rho < 0 {
		rho = 0
	}
	rep := &Report{Method: f.rep.Method, Curvature: f.rep.Curvature, Rho: rho, Trace: f.rep.Trace,
		TraceErr: f.rep.TraceErr, MinEig: f.rep.MinEig, MaxEig: f.rep.MaxEig, Tol: f.rep.Tol}
	rep.setDamping(f.f.Dim())
	g, err := r.redamp(ctx, rep)
	if err != nil {
		return nil, nil, err
	}
	return &Factorization{f: g, rep: rep}, rep, nil
}
