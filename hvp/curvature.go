package hvp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/par"
	"gonum.org/v1/gonum/mat"
)

// Curvature selects the matrix C of the Newton step (DESIGN sections 4
// and 8). The zero value is the generalised Gauss-Newton matrix: it is
// positive semi-definite, so the damped system can never be indefinite,
// whereas the Hessian of a model trained by a stochastic optimiser
// usually has negative eigenvalues that (H + lambda I)^-1 amplifies.
type Curvature int

const (
	// GaussNewton is the generalised Gauss-Newton matrix J^T D J, D the
	// second derivatives of the loss in the outputs: positive
	// semi-definite for both losses. The default.
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
	if _, err := o.terms(b, outs[b.Output].F, df, g[b.Output].F, dg[b.Output].F); err != nil {
		return err
	}
	if c == GaussNewton {
		return st.Backward(dg, acc)
	}
	return st.BackwardTangent(g, dg, scratch, acc)
}

// Dense forms the P×P curvature matrix column by column (C e_j for every
// unit vector, columns spread over the workers), symmetrised as
// (C + C^T)/2 to remove rounding asymmetry. Each worker runs the forward
// and first-order backward passes of every batch once and then, per
// column, only the tangent and second-order passes.
func (o *Objective) Dense(ctx context.Context, c Curvature, theta []float64) (*mat.SymDense, error) {
	return o.dense(ctx, c, theta, nil)
}

func (o *Objective) dense(ctx context.Context, c Curvature, theta []float64, progress func(done, total int)) (*mat.SymDense, error) {
	P := o.numParams()
	if err := checkLen("theta", theta, P); err != nil {
		return nil, err
	}
	cols := make([]float64, P*P) // column j at cols[j*P:]
	nw := o.nworkersFor(P)
	workers := make([]*denseWorker, max(1, nw))
	var mu sync.Mutex
	done := 0
	err := par.For(ctx, P, nw, func(w, j int) error {
		if workers[w] == nil {
			dw, err := o.prepareDense(c, theta, nw > 1)
			if err != nil {
				return err
			}
			workers[w] = dw
		}
		if err := workers[w].column(o, c, j, cols[j*P:(j+1)*P]); err != nil {
			return err
		}
		if progress != nil {
			mu.Lock()
			done++
			progress(done, P)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := mat.NewSymDense(P, nil)
	for i := 0; i < P; i++ {
		for j := i; j < P; j++ {
			m.SetSym(i, j, (cols[j*P+i]+cols[i*P+j])/2)
		}
		m.SetSym(i, i, m.At(i, i)+o.Ridge)
	}
	return m, nil
}

// denseWorker holds one worker's evaluation of every batch for Dense: the
// forward and first-order backward passes, run once, after which each
// column needs only the tangent and second-order passes.
type denseWorker struct {
	bs []densePrepared
	e  []float64 // the unit vector of the current column
}

// densePrepared is one batch's State after the forward pass, with the
// loss's first derivatives g at its outputs f and room for their tangents.
type densePrepared struct {
	st    *graph.State
	g, dg []*graph.Tensor
	f     []float64
}

// prepareDense runs the forward (and, for the Hessian, the first-order
// backward) pass of every batch on fresh States.
func (o *Objective) prepareDense(c Curvature, theta []float64, serial bool) (*denseWorker, error) {
	P := len(theta)
	dw := &denseWorker{bs: make([]densePrepared, len(o.Batches)), e: make([]float64, P)}
	scratch := make([]float64, P)
	for i := range o.Batches {
		b := &o.Batches[i]
		pb := &dw.bs[i]
		pb.st = b.Program.NewState()
		pb.st.SetSerial(serial)
		outs, err := pb.st.Forward(theta, b.Inputs)
		if err != nil {
			return nil, fmt.Errorf("hvp: batch %d: %w", i, err)
		}
		shape := outs[b.Output].Shape
		pb.g = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.dg = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.g[b.Output], pb.dg[b.Output] = graph.NewFloat(shape, nil), graph.NewFloat(shape, nil)
		pb.f = outs[b.Output].F
		if _, err := o.terms(b, pb.f, nil, pb.g[b.Output].F, nil); err != nil {
			return nil, err
		}
		if c == Hessian {
			if err := pb.st.Backward(pb.g, scratch); err != nil {
				return nil, err
			}
		}
	}
	return dw, nil
}

// column adds column j of the curvature (its product with the j-th unit
// vector) to col.
func (dw *denseWorker) column(o *Objective, c Curvature, j int, col []float64) error {
	dw.e[j] = 1
	defer func() { dw.e[j] = 0 }()
	for i := range o.Batches {
		b, pb := &o.Batches[i], &dw.bs[i]
		douts, err := pb.st.Tangent(dw.e)
		if err != nil {
			return fmt.Errorf("hvp: batch %d: %w", i, err)
		}
		dg := pb.dg[b.Output].F
		if douts[b.Output] == nil {
			clear(dg)
		} else {
			df := douts[b.Output].F
			for k, w := range b.Weight {
				if w == 0 {
					dg[k] = 0
					continue
				}
				_, _, d2 := o.Loss.eval(b.Target[k], pb.f[k])
				dg[k] = w * d2 * df[k]
			}
		}
		if c == GaussNewton {
			err = pb.st.Backward(pb.dg, col)
		} else {
			err = pb.st.SecondOrder(pb.dg, col)
		}
		if err != nil {
			return fmt.Errorf("hvp: batch %d: %w", i, err)
		}
	}
	return nil
}

// TraceEstimate estimates trace(C) by Hutchinson's method with n
// Rademacher vectors z (E[z^T C z] = trace C), returning the estimate and
// its standard error.
func (o *Objective) TraceEstimate(ctx context.Context, c Curvature, theta []float64, n int, r *rand.Rand) (tr, stderr float64, err error) {
	return hutchinson(o.numParams(), n, r, nil, func(z, cz []float64) error { return o.Apply(ctx, c, theta, z, cz) })
}

// hutchinson returns the mean of z'^T C z' over n Rademacher vectors z of
// length P, with z' = project(z) (in place; nil: z' = z) and C z' from
// apply, and the mean's standard error: trace(C), or with a projection Q,
// trace(Q C Q).
func hutchinson(P, n int, r *rand.Rand, project func(z []float64), apply func(z, cz []float64) error) (mean, stderr float64, err error) {
	z := make([]float64, P)
	cz := make([]float64, P)
	var sum, sumsq float64
	for k := 0; k < n; k++ {
		for i := range z {
			z[i] = float64(2*r.IntN(2) - 1)
		}
		if project != nil {
			project(z)
		}
		if err := apply(z, cz); err != nil {
			return 0, 0, err
		}
		q := dot(z, cz)
		sum += q
		sumsq += q * q
	}
	mean = sum / float64(n)
	if n > 1 {
		stderr = math.Sqrt(math.Max(sumsq/float64(n)-mean*mean, 0) / float64(n-1))
	}
	return mean, stderr, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func norm(a []float64) float64 { return math.Sqrt(dot(a, a)) }
