package hvp

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// This file: curvature-vector products, C v for the Hessian or the
// Gauss-Newton matrix, of the whole objective or of a set of jobs, and
// Hutchinson's estimate of trace(C). The dense matrix is in dense.go.

// Curvature selects the matrix C of the Newton step (docs/design.md,
// section 4.2). The zero value is the generalised Gauss-Newton matrix: it is
// positive semi-definite, so the damped system can never be indefinite,
// whereas the Hessian of a model trained by a stochastic optimiser
// usually has negative eigenvalues that (H + lambda I)^-1 amplifies.
type Curvature int

const (
	// GaussNewton is the generalised Gauss-Newton matrix J^T D J, D the
	// second derivatives of the loss in the outputs: positive
	// semi-definite for every loss. The default.
	GaussNewton Curvature = iota
	// Hessian is the exact Hessian of the loss (the paper's curvature).
	Hessian
)

func (c Curvature) String() string {
	if c == GaussNewton {
		return "gauss-newton"
	}
	return "hessian"
}

// Apply writes C v into out for the chosen curvature.
func (o *Objective) Apply(ctx context.Context, c Curvature, theta, v, out []float64) error {
	return o.curvature(ctx, theta, v, out, c == GaussNewton)
}

// HVP writes the exact Hessian-vector product H v into hv, where H is the
// Hessian of L(.; w) at theta (forward-over-reverse differentiation, no
// finite differences).
func (o *Objective) HVP(ctx context.Context, theta, v, hv []float64) error {
	return o.curvature(ctx, theta, v, hv, false)
}

// GNVP writes the Gauss-Newton-vector product G v = J^T D J v into gv,
// where J is the Jacobian of the outputs and D the diagonal of second
// derivatives of the weighted loss in the outputs (positive
// semi-definite for every loss; for a grouped loss D is block-diagonal).
func (o *Objective) GNVP(ctx context.Context, theta, v, gv []float64) error {
	return o.curvature(ctx, theta, v, gv, true)
}

func (o *Objective) curvature(ctx context.Context, theta, v, out []float64, gaussNewton bool) error {
	p := o.numParams()
	for _, c := range []struct {
		name string
		v    []float64
	}{{"theta", theta}, {"v", v}, {"result", out}} {
		if err := checkLen(c.name, c.v, p); err != nil {
			return err
		}
	}
	defer func() {
		if o.Ridge != 0 {
			for i, x := range v {
				out[i] += o.Ridge * x
			}
		}
	}()
	_, err := o.reduce(ctx, out, func(w *worker, b *Batch, acc []float64) (float64, error) {
		st := w.state(b.Program)
		outs, douts, err := st.ForwardTangent(theta, v, b.Inputs)
		if err != nil {
			return 0, err
		}
		var df []float64
		if douts[b.Output] != nil {
			df = douts[b.Output].F
		}
		g, dg := w.seedBuffers(b.Program, b.Output, outs[b.Output].Shape)
		if _, err := o.terms(b, outs[b.Output].Shape, outs[b.Output].F, df, g[b.Output].F, dg[b.Output].F, gaussNewton); err != nil {
			return 0, err
		}
		if gaussNewton {
			return 0, st.Backward(dg, acc)
		}
		scratch := make([]float64, p)
		return 0, st.BackwardTangent(g, dg, scratch, acc)
	})
	return err
}

// applyJobs writes scale * sum over jobs of C_job v into out, serially on
// worker w: the curvature of part of the loss (a sampled batch).
func (o *Objective) applyJobs(w *worker, c Curvature, theta []float64, jobs []Job, scale float64, v, out []float64) error {
	clear(out)
	scratch := make([]float64, len(theta))
	defer func() {
		// The sampled curvature estimates the whole, ridge included.
		for i, x := range v {
			out[i] += o.Ridge * x
		}
	}()
	for _, j := range jobs {
		b := o.Batches[j.Batch]
		if j.Weight != nil {
			b.Weight = j.Weight
		}
		if err := o.batchCurvature(w, &b, c, theta, v, out, scratch); err != nil {
			return err
		}
	}
	for i := range out {
		out[i] *= scale
	}
	return nil
}

// batchCurvature adds batch b's C v into acc; scratch receives the
// gradient that the forward-over-reverse pass also produces.
func (o *Objective) batchCurvature(w *worker, b *Batch, c Curvature, theta, v, acc, scratch []float64) error {
	st := w.state(b.Program)
	outs, douts, err := st.ForwardTangent(theta, v, b.Inputs)
	if err != nil {
		return err
	}
	var df []float64
	if douts[b.Output] != nil {
		df = douts[b.Output].F
	}
	g, dg := w.seedBuffers(b.Program, b.Output, outs[b.Output].Shape)
	if _, err := o.terms(b, outs[b.Output].Shape, outs[b.Output].F, df, g[b.Output].F, dg[b.Output].F, c == GaussNewton); err != nil {
		return err
	}
	if c == GaussNewton {
		return st.Backward(dg, acc)
	}
	return st.BackwardTangent(g, dg, scratch, acc)
}

// TraceEstimate estimates trace(C) by Hutchinson's method with n
// Rademacher vectors z (E[z^T C z] = trace C), returning the estimate and
// its standard error.
func (o *Objective) TraceEstimate(ctx context.Context, c Curvature, theta []float64, n int, r *rand.Rand) (tr, stderr float64, err error) {
	return hutchinson(o.numParams(), n, r, nil, func(z, cz [][]float64) error { return o.ApplyMany(ctx, c, theta, z, cz) })
}

// hutchinson returns the mean of z'^T C z' over n Rademacher vectors z of
// length P, with z' = project(z) (in place; nil: z' = z) and C z' from
// apply (all n products in one call), and the mean's standard error:
// trace(C), or with a projection Q, trace(Q C Q).
func hutchinson(P, n int, r *rand.Rand, project func(z []float64), apply func(z, cz [][]float64) error) (mean, stderr float64, err error) {
	zs := make([][]float64, n)
	czs := make([][]float64, n)
	for k := range zs {
		z := make([]float64, P)
		for i := range z {
			z[i] = float64(2*r.IntN(2) - 1)
		}
		if project != nil {
			project(z)
		}
		zs[k], czs[k] = z, make([]float64, P)
	}
	if err := apply(zs, czs); err != nil {
		return 0, 0, err
	}
	var sum, sumsq float64
	for k, z := range zs {
		q := num.Dot(z, czs[k])
		sum += q
		sumsq += q * q
	}
	mean = sum / float64(n)
	if n > 1 {
		stderr = math.Sqrt(math.Max(sumsq/float64(n)-mean*mean, 0) / float64(n-1))
	}
	return mean, stderr, nil
}
