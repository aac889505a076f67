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
// budget (sgd: GDDamping) or fitted to budgeted re-fits of a few blocks
// (adam, or whenever Fit asks), with the agreement of the estimate at
// that damping with those re-fits when there are any.
type Proximal struct {
	// Budget is the training budget stated, in ParseBudget's form.
	Budget string `json:"budget"`
	// Source is "derived" (GDDamping) or "fitted" (FitDamping).
	Source string `json:"source"`
	// Start is where the budgeted re-fits start: "init" (the weights
	// training started from) or "warm" (the trained weights, with the
	// full gradient there subtracted: tilted).
	Start string `json:"start"`
	// Lambda is the damping in the units of the summed loss; Rho is it
	// relative to the mean eigenvalue of the curvature (with the ridge),
	// the audit's damping.
	Lambda float64 `json:"lambda"`
	Rho    float64 `json:"rho"`
	// Derived is GDDamping of the budget, whichever was used: for
	// comparison with a fitted damping.
	Derived float64 `json:"derived_lambda"`
	// Blocks are the blocks re-fitted (labels); Cosine and RelError are
	// the agreement of the estimate (C + ridge + lambda I)^-1 g_b with
	// the budgeted re-fits' changes, in the curvature's norm (the
	// linearised change of the training predictions): the mean cosine
	// and the root of the summed squared error over the summed squared
	// change. NaN without re-fits.
	Blocks   []string `json:"blocks,omitempty"`
	Cosine   float64  `json:"cosine"`
	RelError float64  `json:"rel_error"`
}

// ProximalProblem is what the early-stopping estimate needs of an audit.
type ProximalProblem struct {
	// Full is the training objective (with the ridge) and Curvature the
	// audit's curvature.
	Full      *hvp.Objective
	Curvature hvp.Curvature
	// Theta is the trained parameters; Init, when set, the parameters
	// training started from (cold re-fits); nil: warm, tilted re-fits.
	Theta, Init []float64
	// Seqs and Terms count the training sequences and loss terms.
	Seqs, Terms int
	// Grad is the mini-batch gradient without block b (b < 0: none left
	// out); BlockGrad writes the gradient of block b's terms at Theta.
	Grad      func(b int) MinibatchGrad
	BlockGrad func(ctx context.Context, b int, g []float64) error
	// Blocks is the number of blocks and Label names one.
	Blocks int
	Label  func(b int) string
	Budget Budget
	// Fit is the number of blocks re-fitted to fit the damping (0: none
	// for sgd, whose damping is derived; FitBlocks for adam).
	Fit int
	// Seed draws the blocks re-fitted.
	Seed uint64
}

// FitBlocks is the number of blocks the damping of an Adam-trained
// model is fitted to: a handful, each a re-training of the budget.
const FitBlocks = 6

// Refits re-trains the model with the budget without each of the blocks
// bs and once with all the data, from the same start with the same
// shuffles, and returns each block's change theta_-b - theta_all.
func (pr *ProximalProblem) Refits(ctx context.Context, bs []int) ([][]float64, error) {
	start, tilt := pr.Init, []float64(nil)
	decay := pr.Full.Ridge / float64(pr.Terms)
	if start == nil {
		start = pr.Theta
		tilt = make([]float64, len(start))
		if _, err := pr.Full.Gradient(ctx, start, tilt); err != nil {
			return nil, err
		}
		num.Scale(tilt, 1/float64(pr.Terms))
	}
	all, err := Train(ctx, pr.Grad(-1), pr.Seqs, start, decay, tilt, pr.Budget)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(bs))
	for k, b := range bs {
		th, err := Train(ctx, pr.Grad(b), pr.Seqs, start, decay, tilt, pr.Budget)
		if err != nil {
			return nil, err
		}
		out[k] = num.Sub(th, all)
	}
	return out, nil
}

// Damping chooses the early-stopping estimate's damping: GDDamping for
// sgd without Fit, else fitted (FitDamping) to budgeted re-fits of Fit
// blocks (FitBlocks for adam when Fit is 0) drawn with Seed. It returns
// the choice and its agreement with the re-fits.
func (pr *ProximalProblem) Damping(ctx context.Context) (*Proximal, error) {
	if pr.Curvature != hvp.GaussNewton {
		return nil, fmt.Errorf("the early-stopping estimate needs the Gauss-Newton curvature (the proximal response's)")
	}
	c, err := pr.Full.Dense(ctx, hvp.GaussNewton, pr.Theta)
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
	out := &Proximal{Budget: pr.Budget.String(), Derived: GDDamping(pr.Budget, pr.Terms, pr.Seqs), Start: "warm", Cosine: math.NaN(), RelError: math.NaN()}
	if pr.Init != nil {
		out.Start = "init"
	}
	n := pr.Fit
	if n == 0 && pr.Budget.Optimizer == "adam" {
		n = FitBlocks
	}
	n = min(n, pr.Blocks)
	out.Lambda, out.Source = out.Derived, "derived"
	if n > 0 {
		bs := rand.New(rand.NewPCG(pr.Seed, 0x70726f78)).Perm(pr.Blocks)[:n]
		slices.Sort(bs)
		deltas, err := pr.Refits(ctx, bs)
		if err != nil {
			return nil, err
		}
		var gs [][]float64
		for _, b := range bs {
			g := make([]float64, P)
			if err := pr.BlockGrad(ctx, b, g); err != nil {
				return nil, err
			}
			gs = append(gs, g)
			out.Blocks = append(out.Blocks, pr.Label(b))
		}
		f := sp.fit(gs, deltas)
		if pr.Budget.Optimizer == "adam" || pr.Fit > 0 {
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
