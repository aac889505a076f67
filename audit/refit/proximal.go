package refit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Proximal is how the damping of the early-stopping estimate was chosen
// (docs/design.md, "Models stopped early"): derived from the training
// budget (GDDamping) or fitted to budgeted re-fits of a few blocks
// (Budget.Damping), with the agreement of the estimate at that damping
// with those re-fits.
type Proximal struct {
	// Budget is the training budget stated, in ParseBudget's form.
	Budget string
	// Source is "derived" (GDDamping) or "fitted" (to the re-fits).
	Source string
	// Start is where the budgeted re-fits start: "init" (the weights
	// training started from) or "warm" (the trained weights, with the
	// full gradient there subtracted: tilted).
	Start string
	// Lambda is the damping in the units of the summed loss; Rho is it
	// relative to the mean eigenvalue of the curvature (with the ridge),
	// the audit's damping.
	Lambda float64
	Rho    float64
	// Derived is GDDamping of the budget, whichever was used: for
	// comparison with a fitted damping.
	Derived float64
	// Blocks are the blocks re-fitted (labels); Cosine and RelError are
	// the agreement of the estimate (C + ridge + lambda I)^-1 g_b with
	// the budgeted re-fits' changes, in the curvature's norm (the
	// linearised change of the training predictions): the mean cosine
	// and the root of the summed squared error over the summed squared
	// change.
	Blocks   []string
	Cosine   float64
	RelError float64
}

// ProximalProblem is what the early-stopping estimate needs of an audit.
type ProximalProblem struct {
	// Loss, Ridge and Workers are the training objective's (hvp.Objective).
	Loss    hvp.Loss
	Ridge   float64
	Workers int
	// Parts has one batch per training sequence, with all its terms;
	// Weights(s, b) is sequence s's weights without block b's terms.
	Parts   []hvp.Batch
	Weights func(s, b int) []float64
	// Curvature is the audit's (Gauss-Newton: the proximal response's).
	Curvature hvp.Curvature
	// Theta is the trained parameters; Init, when set, the parameters
	// training started from (cold re-fits); nil: warm, tilted re-fits.
	Theta, Init []float64
	// Labels names the blocks.
	Labels []string
	Budget Budget
	// Seed draws the blocks re-fitted.
	Seed uint64

	// The re-fits' start, tilt and re-fit on all the data (Refit).
	start, tilt, all []float64
}

// objective is the loss of the sequences seqs (all: nil) without block b
// (b < 0: none), with the ridge when ridge is set, and its number of
// terms with block b's.
func (pr *ProximalProblem) objective(seqs []int, b int, ridge bool) (*hvp.Objective, int) {
	o := &hvp.Objective{Loss: pr.Loss, Workers: pr.Workers}
	if ridge {
		o.Ridge = pr.Ridge
	}
	if seqs == nil {
		seqs = make([]int, len(pr.Parts))
		for i := range seqs {
			seqs[i] = i
		}
	}
	n := 0
	for _, s := range seqs {
		part := pr.Parts[s]
		for _, w := range part.Weight {
			if w != 0 {
				n++
			}
		}
		if b >= 0 {
			part.Weight = pr.Weights(s, b)
		}
		o.Batches = append(o.Batches, part)
	}
	return o, n
}

// check refuses a problem the estimate is not built for.
func (pr *ProximalProblem) check() error {
	if pr.Curvature != hvp.GaussNewton || pr.Loss != hvp.SquaredError {
		return fmt.Errorf("audit: the early-stopping estimate (--train-budget) needs the Gauss-Newton curvature and the squared-error loss")
	}
	for _, part := range pr.Parts {
		if part.Program == nil {
			return fmt.Errorf("audit: the early-stopping estimate (--train-budget) needs the exact or dual solver (--solver exact)")
		}
	}
	if pr.Init != nil && len(pr.Init) != len(pr.Theta) {
		return fmt.Errorf("audit: --train-init has %d parameters, the audited model %d: give the same model's weights before training (and no --params)", len(pr.Init), len(pr.Theta))
	}
	return nil
}

// grad is the mini-batch gradient without block b (b < 0: none left out).
func (pr *ProximalProblem) grad(b int) MinibatchGrad {
	return func(ctx context.Context, theta []float64, seqs []int, g []float64) (int, error) {
		o, n := pr.objective(seqs, b, false)
		_, err := o.Gradient(ctx, theta, g)
		return n, err
	}
}

// blockGrad is the gradient of block b's terms at Theta.
func (pr *ProximalProblem) blockGrad(ctx context.Context, b int) ([]float64, error) {
	full, _ := pr.objective(nil, -1, false)
	rest, _ := pr.objective(nil, b, false)
	g, r := make([]float64, len(pr.Theta)), make([]float64, len(pr.Theta))
	if _, err := full.Gradient(ctx, pr.Theta, g); err != nil {
		return nil, err
	}
	_, err := rest.Gradient(ctx, pr.Theta, r)
	return num.Sub(g, r), err
}

// FitBlocks is the number of blocks the damping of an Adam-trained
// model is fitted to: a handful, each a re-training of the budget.
const FitBlocks = 6

// Refits re-trains the model with the budget without each of the blocks
// bs and once with all the data, from the same start with the same
// shuffles, and returns each block's change theta_-b - theta_all (Refit's).
func (pr *ProximalProblem) Refits(ctx context.Context, bs []int) ([][]float64, error) {
	out := make([][]float64, len(bs))
	for k, b := range bs {
		var err error
		if out[k], err = pr.Refit(ctx, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Refit re-trains the model with the budget without block b and returns
// its change from the re-fit on all the data (run once, and kept): from
// Init when set, else warm from Theta on the loss minus the full
// gradient at Theta (tilted, as audit's warm re-fits), which makes the
// re-fit on all the data stay near Theta.
func (pr *ProximalProblem) Refit(ctx context.Context, b int) ([]float64, error) {
	full, terms := pr.objective(nil, -1, true)
	decay := pr.Ridge / float64(terms)
	if pr.all == nil {
		if err := pr.check(); err != nil {
			return nil, err
		}
		pr.start, pr.tilt = pr.Init, nil
		if pr.start == nil {
			pr.start = pr.Theta
			pr.tilt = make([]float64, len(pr.start))
			if _, err := full.Gradient(ctx, pr.start, pr.tilt); err != nil {
				return nil, err
			}
			num.Scale(pr.tilt, 1/float64(terms))
		}
		all, err := Train(ctx, pr.grad(-1), len(pr.Parts), pr.start, decay, pr.tilt, pr.Budget)
		if err != nil {
			return nil, err
		}
		pr.all = all
	}
	th, err := Train(ctx, pr.grad(b), len(pr.Parts), pr.start, decay, pr.tilt, pr.Budget)
	if err != nil {
		return nil, err
	}
	return num.Sub(th, pr.all), nil
}

// Damping chooses the early-stopping estimate's damping: derived from
// the budget (GDDamping) or fitted to budgeted re-fits (Budget.Damping;
// by default fitted for adam, derived for sgd), and measures its
// agreement with budgeted re-fits of Budget.Fit blocks (FitBlocks when 0)
// drawn with Seed, the ones it is fitted to.
func (pr *ProximalProblem) Damping(ctx context.Context) (*Proximal, error) {
	if err := pr.check(); err != nil {
		return nil, err
	}
	full, terms := pr.objective(nil, -1, true)
	c, err := full.Dense(ctx, hvp.GaussNewton, pr.Theta)
	if err != nil {
		return nil, err
	}
	P := len(pr.Theta)
	var e mat.EigenSym
	if !e.Factorize(c, true) {
		return nil, fmt.Errorf("early-stopping estimate: eigendecomposition of the curvature failed")
	}
	sp := &spectrum{vals: e.Values(nil), vecs: &mat.Dense{}}
	e.VectorsTo(sp.vecs)
	trace := mat.Trace(c)
	out := &Proximal{Budget: pr.Budget.String(), Derived: GDDamping(pr.Budget, terms, len(pr.Parts)), Start: "warm", Cosine: math.NaN(), RelError: math.NaN()}
	if pr.Init != nil {
		out.Start = "init"
	}
	n := pr.Budget.Fit
	if n == 0 {
		n = FitBlocks
	}
	n = min(n, len(pr.Labels))
	out.Lambda, out.Source = out.Derived, "derived"
	if n > 0 {
		bs := rand.New(rand.NewPCG(pr.Seed, 0x70726f78)).Perm(len(pr.Labels))[:n]
		slices.Sort(bs)
		deltas, err := pr.Refits(ctx, bs)
		if err != nil {
			return nil, err
		}
		var gs [][]float64
		for _, b := range bs {
			g, err := pr.blockGrad(ctx, b)
			if err != nil {
				return nil, err
			}
			gs = append(gs, g)
			out.Blocks = append(out.Blocks, pr.Labels[b])
		}
		f := sp.fit(gs, deltas)
		if pr.Budget.fitted() {
			out.Lambda, out.Source = f.lambda(trace/float64(P)), "fitted"
		}
		out.Cosine, out.RelError = f.agreement(out.Lambda)
	}
	out.Rho = out.Lambda * float64(P) / trace
	return out, nil
}

// spectrum is the curvature's eigendecomposition.
type spectrum struct {
	vals []float64
	vecs *mat.Dense
}

// coords returns V^T x.
func (sp *spectrum) coords(x []float64) []float64 {
	var t mat.VecDense
	t.MulVec(sp.vecs.T(), mat.NewVecDense(len(x), x))
	return t.RawVector().Data
}

// dampingFit holds the block gradients and re-fit changes in the
// curvature's eigenbasis, for the agreement at any damping.
type dampingFit struct {
	vals   []float64
	gs, ds [][]float64
}

func (sp *spectrum) fit(gs, deltas [][]float64) *dampingFit {
	f := &dampingFit{vals: sp.vals}
	for k := range gs {
		f.gs = append(f.gs, sp.coords(gs[k]))
		f.ds = append(f.ds, sp.coords(deltas[k]))
	}
	return f
}

// agreement is the mean cosine and the relative error, in the norm
// |x|_C^2 = sum |c_i| x_i^2, of the estimates (C + lambda I)^-1 g_b
// against the re-fit changes.
func (f *dampingFit) agreement(lambda float64) (cos, rel float64) {
	var num2, den2 float64
	for k, g := range f.gs {
		var dot, ee, dd float64
		for i, c := range f.vals {
			w := math.Abs(c)
			est := g[i] / (c + lambda)
			d := f.ds[k][i]
			dot += w * est * d
			ee += w * est * est
			dd += w * d * d
			num2 += w * (est - d) * (est - d)
		}
		den2 += dd
		cos += dot / math.Sqrt(ee*dd)
	}
	return cos / float64(len(f.gs)), math.Sqrt(num2 / den2)
}

// lambda is the damping, searched over 1e-8 to 1e4 times the mean
// eigenvalue mean (a grid of ratio 10^(1/8), then golden-section search
// in the best grid point's bracket), with the least relative error.
func (f *dampingFit) lambda(mean float64) float64 {
	loss := func(l float64) float64 {
		_, r := f.agreement(math.Exp(l))
		if math.IsNaN(r) {
			return math.Inf(1)
		}
		return r
	}
	lo, hi := math.Log(1e-8*mean), math.Log(1e4*mean)
	const grid = 12 * 8
	step := (hi - lo) / grid
	best, bl := math.Inf(1), lo
	for k := 0; k <= grid; k++ {
		l := lo + float64(k)*step
		if v := loss(l); v < best {
			best, bl = v, l
		}
	}
	a, b := bl-step, bl+step
	const phi = 0.6180339887498949
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := loss(x1), loss(x2)
	for b-a > 1e-6 {
		if f1 < f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = loss(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = loss(x2)
		}
	}
	if min(f1, f2) > best {
		return math.Exp(bl)
	}
	if f1 < f2 {
		return math.Exp(x1)
	}
	return math.Exp(x2)
}
