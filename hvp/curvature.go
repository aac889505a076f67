package hvp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/rnnaudit/rnnaudit/graph"
	"gonum.org/v1/gonum/mat"
)

// Curvature selects the matrix C of the Newton step (DESIGN section 4).
type Curvature int

const (
	// Hessian is the exact Hessian of the loss.
	Hessian Curvature = iota
	// GaussNewton is J^T D J, positive semi-definite for both losses.
	GaussNewton
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
	next := make(chan int, P)
	for j := 0; j < P; j++ {
		next <- j
	}
	close(next)
	errs := make([]error, o.nworkersFor(P))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	tick := func() {
		if progress == nil {
			return
		}
		mu.Lock()
		done++
		progress(done, P)
		mu.Unlock()
	}
	for wi := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[wi] = o.denseColumns(ctx, c, theta, next, cols, len(errs) > 1, tick)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
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

// denseColumns computes the columns it takes from next into cols.
func (o *Objective) denseColumns(ctx context.Context, c Curvature, theta []float64, next <-chan int, cols []float64, serial bool, tick func()) error {
	P := len(theta)
	type prepared struct {
		st    *graph.State
		g, dg []*graph.Tensor
		f     []float64
	}
	bs := make([]prepared, len(o.Batches))
	scratch := make([]float64, P)
	var err error
	for i := range o.Batches {
		b := &o.Batches[i]
		pb := &bs[i]
		pb.st = b.Program.NewState()
		pb.st.SetSerial(serial)
		outs, ferr := pb.st.Forward(theta, b.Inputs)
		if ferr != nil {
			err = fmt.Errorf("hvp: batch %d: %w", i, ferr)
			break
		}
		shape := outs[b.Output].Shape
		pb.g = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.dg = make([]*graph.Tensor, b.Program.NumOutputs())
		pb.g[b.Output], pb.dg[b.Output] = graph.NewFloat(shape, nil), graph.NewFloat(shape, nil)
		pb.f = outs[b.Output].F
		if _, err = o.terms(b, pb.f, nil, pb.g[b.Output].F, nil); err != nil {
			break
		}
		if c == Hessian {
			if err = pb.st.Backward(pb.g, scratch); err != nil {
				break
			}
		}
	}
	e := make([]float64, P)
	for j := range next {
		if err != nil {
			continue // drain
		}
		if err = ctx.Err(); err != nil {
			continue
		}
		e[j] = 1
		col := cols[j*P : (j+1)*P]
		for i := range o.Batches {
			b, pb := &o.Batches[i], &bs[i]
			douts, terr := pb.st.Tangent(e)
			if terr != nil {
				err = fmt.Errorf("hvp: batch %d: %w", i, terr)
				break
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
				err = fmt.Errorf("hvp: batch %d: %w", i, err)
				break
			}
		}
		e[j] = 0
		tick()
	}
	return err
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
