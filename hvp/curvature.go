package hvp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

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
// (C + C^T)/2 to remove rounding asymmetry.
func (o *Objective) Dense(ctx context.Context, c Curvature, theta []float64) (*mat.SymDense, error) {
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
	for wi := range errs {
		w := o.worker(wi)
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := make([]float64, P)
			scratch := make([]float64, P)
			for j := range next {
				if errs[wi] != nil {
					continue
				}
				if err := ctx.Err(); err != nil {
					errs[wi] = err
					continue
				}
				e[j] = 1
				col := cols[j*P : (j+1)*P]
				for bi := range o.Batches {
					if err := o.batchCurvature(w, &o.Batches[bi], c, theta, e, col, scratch); err != nil {
						errs[wi] = fmt.Errorf("hvp: batch %d: %w", bi, err)
						break
					}
				}
				e[j] = 0
			}
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
	}
	return m, nil
}

// TraceEstimate estimates trace(C) by Hutchinson's method with n
// Rademacher vectors z (E[z^T C z] = trace C), returning the estimate and
// its standard error.
func (o *Objective) TraceEstimate(ctx context.Context, c Curvature, theta []float64, n int, r *rand.Rand) (tr, stderr float64, err error) {
	P := o.numParams()
	z := make([]float64, P)
	cz := make([]float64, P)
	var sum, sumsq float64
	for k := 0; k < n; k++ {
		for i := range z {
			z[i] = float64(2*r.IntN(2) - 1)
		}
		if err := o.Apply(ctx, c, theta, z, cz); err != nil {
			return 0, 0, err
		}
		q := dot(z, cz)
		sum += q
		sumsq += q * q
	}
	mean := sum / float64(n)
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
