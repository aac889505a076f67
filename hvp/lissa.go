package hvp

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// lissaMethod is LiSSA: the paper's stochastic recursion, run afresh per
// right-hand side on sampled curvature products, with the scale from
// power iteration and lambda from a Hutchinson trace estimate.
type lissaMethod struct{}

func (lissaMethod) String() string { return "lissa" }

// powerMaxEig estimates the largest eigenvalue of C (in magnitude) by
// power iteration.
func powerMaxEig(ctx context.Context, o *Objective, c Curvature, theta []float64, iters int, r *rand.Rand) (float64, error) {
	P := o.numParams()
	v := make([]float64, P)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	cv := make([]float64, P)
	ev := 0.0
	for k := 0; k < iters; k++ {
		n := num.Norm(v)
		for i := range v {
			v[i] /= n
		}
		if err := o.Apply(ctx, c, theta, v, cv); err != nil {
			return 0, err
		}
		ev = num.Dot(v, cv)
		copy(v, cv)
	}
	return ev, nil
}

// lissaFactor is the LiSSA method's factor: the recursion with a fixed
// scale and damping, run afresh for every right-hand side.
type lissaFactor struct {
	o     *Objective
	theta []float64
	opt   Options
	sigma float64
	lam   float64
}

func (f *lissaFactor) Dim() int { return len(f.theta) }

func (f *lissaFactor) SolveAll(ctx context.Context, x, b [][]float64) error {
	return f.solveAll(ctx, x, b, nil)
}

func (lissaMethod) factorize(ctx context.Context, o *Objective, theta []float64, opt *Options, rep *Report) (factor, error) {
	sigma := opt.Scale
	if sigma <= 0 {
		ev, err := powerMaxEig(ctx, o, opt.Curvature, theta, 50, rand.New(rand.NewPCG(opt.Seed, 0x706f776572)))
		if err != nil {
			return nil, err
		}
		rep.MaxEig = ev
		sigma = 1.1 * math.Abs(ev)
	}
	// The same lambda as the other methods, lambda = rho trace(C) / P,
	// reached as lambda_0 * sigma.
	if err := traceForIterative(ctx, o, theta, opt, rep); err != nil {
		return nil, err
	}
	return &lissaFactor{o: o, theta: theta, opt: *opt, sigma: sigma, lam: rep.Lambda}, nil
}

func (f *lissaFactor) solveAll(ctx context.Context, out, rhs [][]float64, rep *Report) error {
	o, theta, opt, sigma := f.o, f.theta, &f.opt, f.sigma
	P := len(theta)
	if err := checkSolveArgs(P, out, rhs); err != nil {
		return err
	}
	depth, repeats, bs := opt.Depth, opt.Repeats, opt.BatchSize
	if depth <= 0 {
		depth = 1000
	}
	if repeats <= 0 {
		repeats = 1
	}
	if bs <= 0 {
		bs = 1
	}
	lam0 := f.lam / sigma
	sample := opt.Sample
	if sample == nil {
		n := len(o.Batches)
		sample = func(r *rand.Rand, size int) ([]Job, float64) {
			jobs := make([]Job, size)
			for i := range jobs {
				jobs[i] = Job{Batch: r.IntN(n)}
			}
			return jobs, float64(n) / float64(size)
		}
	}
	iters := make([]int, len(rhs))
	nw := o.nworkersFor(len(rhs))
	ws := make([]*worker, max(1, nw))
	hvs := make([][]float64, len(ws))
	for wi := range ws {
		ws[wi], hvs[wi] = o.worker(wi), make([]float64, P)
	}
	err := par.For(ctx, len(rhs), nw, func(wi, j int) error {
		w, hv := ws[wi], hvs[wi]
		b := rhs[j]
		bn := num.Norm(b)
		x := make([]float64, P)
		for rpt := 0; rpt < repeats; rpt++ {
			r := rand.New(rand.NewPCG(opt.Seed+uint64(rpt), uint64(j)))
			h := append([]float64(nil), b...)
			// Average the iterates of the second half (tail
			// averaging): same fixed point, far less sampling noise.
			tail := depth - depth/2
			avg := make([]float64, P)
			for s := 1; s <= depth; s++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				jobs, scale := sample(r, bs)
				if err := o.applyJobs(w, opt.Curvature, theta, jobs, scale, h, hv); err != nil {
					return err
				}
				for i := range h {
					h[i] = b[i] + (1-lam0)*h[i] - hv[i]/sigma
				}
				if hn := num.Norm(h); math.IsNaN(hn) || hn > 1e8*math.Max(bn, 1e-300)*float64(depth) {
					return errs.Fix([]Option{OptScale, OptDamping}, "%w on right-hand side %d at step %d (|h| = %.3g, |b| = %.3g): the scale sigma = %.4g is below the largest eigenvalue of the sampled curvature", ErrDiverged, j, s, hn, bn, sigma)
				}
				if s > depth-tail {
					for i, v := range h {
						avg[i] += v
					}
				}
			}
			for i := range x {
				x[i] += avg[i] / float64(tail) / sigma / float64(repeats)
			}
		}
		if out[j] == nil {
			out[j] = x
		} else {
			copy(out[j], x)
		}
		iters[j] = depth * repeats
		return nil
	})
	if err != nil {
		return err
	}
	if rep == nil {
		return nil
	}
	rep.Iterations = iters
	rep.Residuals = make([]float64, len(rhs))
	// Exact residuals against the full curvature.
	cx := make([]float64, P)
	for j, x := range out {
		if err := o.Apply(ctx, opt.Curvature, theta, x, cx); err != nil {
			return err
		}
		for i := range cx {
			cx[i] += f.lam*x[i] - rhs[j][i]
		}
		rep.Residuals[j] = num.Norm(cx) / math.Max(num.Norm(rhs[j]), math.SmallestNonzeroFloat64)
	}
	return nil
}
