package refit

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// TestGDDampingQuadratic checks the damping-from-budget rule against
// gradient descent worked by hand on the quadratic sum loss
// L = 1/2 theta^T diag(c) theta - f.theta of N = 50 terms, trained
// full-batch from 0 with lr 0.1 on the mean loss for 100 epochs: the
// total step on the sum is T = 100 * 0.1 / 50 = 0.2 and GDDamping is
// 1/T = 5. Gradient descent's iterate is (1 - (1 - 0.1 c/50)^100) f/c:
// for c = 0.05 (far below lambda) 0.19901 f, for c = 500 (far above)
// f/500 (one step of 0.1*500/50 = 1 reaches the minimum). The damped
// estimate f/(c + 5) is 0.19802 f and f/505: within 1% for both. A
// damping ten times too small or too large is off by a factor of 7 to
// 10 on one of the two.
func TestGDDampingQuadratic(t *testing.T) {
	b := Budget{Optimizer: "sgd", Epochs: 100, LR: 0.1}
	lambda := GDDamping(b, 50, 10)
	if math.Abs(lambda-5) > 1e-12 {
		t.Fatalf("GDDamping = %g, want 5 (1/T, T = 100*0.1/50)", lambda)
	}
	// The iterate, by Train on the same quadratic (one sequence holding
	// all 50 terms, so full-batch: the mean gradient is grad L / 50).
	c := []float64{0.05, 500}
	f := []float64{1, 1}
	grad := func(_ context.Context, theta []float64, _ []int, g []float64) (int, error) {
		for i := range g {
			g[i] = c[i]*theta[i] - f[i]
		}
		return 50, nil
	}
	got, err := Train(context.Background(), grad, 1, []float64{0, 0}, 0, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{(1 - math.Pow(1-0.1*0.05/50, 100)) / 0.05, 1.0 / 500} {
		if math.Abs(got[i]-want) > 1e-12*math.Abs(want) {
			t.Fatalf("gradient descent iterate %d: %g, hand-worked %g", i, got[i], want)
		}
		if est := f[i] / (c[i] + lambda); math.Abs(est/got[i]-1) > 0.01 {
			t.Errorf("eigenvalue %g: damped estimate %g, gradient descent %g: off by more than 1%%", c[i], est, got[i])
		}
		for _, l := range []float64{lambda / 10, lambda * 10} {
			if est := f[i] / (c[i] + l); i == 0 && math.Abs(est/got[i]-1) < 0.5 {
				t.Errorf("damping %g also matches eigenvalue %g (%g vs %g): the check cannot tell", l, c[i], est, got[i])
			}
		}
	}
}

// TestAdamFirstSteps: Adam's first step from bias-corrected moments is
// lr g/(|g| + eps), a step of lr against the sign of the gradient,
// whatever its size; the second, with the same gradient, too.
func TestAdamFirstSteps(t *testing.T) {
	grad := func(_ context.Context, theta []float64, _ []int, g []float64) (int, error) {
		g[0], g[1] = 3e-3, -400 // constant
		return 1, nil
	}
	b := Budget{Optimizer: "adam", Epochs: 2, LR: 0.01}
	got, err := Train(context.Background(), grad, 1, []float64{1, 1}, 0, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	step := 3e-3 / (3e-3 + 1e-8)
	want := []float64{1 - 0.01*2*step, 1 + 0.02}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("Adam after two steps: theta[%d] = %.15g, hand-worked %.15g", i, got[i], want[i])
		}
	}
}

// linearModel is a tiny least-squares model: n sequences of m terms,
// y = x.w + noise, loss sum (y - x.theta)^2 plus a ridge; C = 2 X^T X +
// ridge I is its exact curvature.
type linearModel struct {
	x     [][][]float64 // [seq][term][feature]
	y     [][]float64
	ridge float64
}

func newLinear(n, m, P int, seed uint64) *linearModel {
	r := rand.New(rand.NewPCG(seed, 1))
	lm := &linearModel{ridge: 0.01}
	w := make([]float64, P)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	for s := 0; s < n; s++ {
		var xs [][]float64
		var ys []float64
		for k := 0; k < m; k++ {
			x := make([]float64, P)
			for i := range x {
				// Features of very different scales: a spread spectrum.
				x[i] = r.NormFloat64() * math.Pow(3, float64(i)-1)
			}
			xs = append(xs, x)
			ys = append(ys, num.Dot(x, w)+r.NormFloat64())
		}
		lm.x, lm.y = append(lm.x, xs), append(lm.y, ys)
	}
	return lm
}

// grad is the mini-batch gradient without sequence drop (-1: none).
func (lm *linearModel) grad(drop int) MinibatchGrad {
	return func(_ context.Context, theta []float64, seqs []int, g []float64) (int, error) {
		k := 0
		for _, s := range seqs {
			for j, x := range lm.x[s] {
				k++ // the mean's denominator counts the dropped terms too
				if s != drop {
					num.AddScaled(g, -2*(lm.y[s][j]-num.Dot(x, theta)), x)
				}
			}
		}
		return k, nil
	}
}

// curvature is 2 X^T X + ridge I.
func (lm *linearModel) curvature(P int) *mat.SymDense {
	c := mat.NewSymDense(P, nil)
	for _, xs := range lm.x {
		for _, x := range xs {
			for i := 0; i < P; i++ {
				for j := i; j < P; j++ {
					c.SetSym(i, j, c.At(i, j)+2*x[i]*x[j])
				}
			}
		}
	}
	for i := 0; i < P; i++ {
		c.SetSym(i, i, c.At(i, i)+lm.ridge)
	}
	return c
}

// TestProximalAgainstBudgetedRefits: on the tiny linear model trained
// with mini-batch SGD and stopped early, warm budgeted re-fits (the same
// budget again from the trained parameters, on the loss minus the full
// gradient there, with the same shuffles, with and without a sequence)
// move by what the estimate (C + lambda I)^-1 g_b with lambda from the
// budget (GDDamping) says: cosine 0.975, relative error 0.26 (the
// damping's filter differs from gradient descent's by up to 27% at
// eigenvalues near lambda). The minimiser's response (lambda 0: where the
// undamped influence estimate aims) is off by 0.95.
func TestProximalAgainstBudgetedRefits(t *testing.T) {
	ctx := context.Background()
	const n, m, P = 24, 3, 4
	lm := newLinear(n, m, P, 7)
	b := Budget{Optimizer: "sgd", Epochs: 30, LR: 0.003, Batch: 6, Seed: 3}
	decay := lm.ridge / float64(n*m)
	start := make([]float64, P)
	all, err := Train(ctx, lm.grad(-1), n, start, decay, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	// The trained model, stopped early, and the warm re-fits from it:
	// the same budget on the loss minus the full gradient at the trained
	// parameters (tilted), with and without a sequence.
	trained := all
	tilt := make([]float64, P)
	if _, err := lm.grad(-1)(ctx, trained, seqRange(n), tilt); err != nil {
		t.Fatal(err)
	}
	for i := range tilt {
		tilt[i] = tilt[i]/float64(n*m) + decay*trained[i]
	}
	if all, err = Train(ctx, lm.grad(-1), n, trained, decay, tilt, b); err != nil {
		t.Fatal(err)
	}
	c := lm.curvature(P)
	var e mat.EigenSym
	if !e.Factorize(c, true) {
		t.Fatal("eigendecomposition failed")
	}
	sp := &spectrum{vals: e.Values(nil), vecs: &mat.Dense{}}
	e.VectorsTo(sp.vecs)
	lambda := GDDamping(b, n*m, n)
	if !(lambda > sp.vals[0] && lambda < sp.vals[P-1]) {
		t.Fatalf("the budget's damping %g is not inside the spectrum %v: the test would not tell", lambda, sp.vals)
	}
	var gs, ds [][]float64
	for drop := 0; drop < n; drop += 5 {
		th, err := Train(ctx, lm.grad(drop), n, trained, decay, tilt, b)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, num.Sub(th, all))
		// The force: the gradient of the sequence's terms at the trained
		// parameters (removing them moves theta along +C^-1 g_b).
		g := make([]float64, P)
		if _, err := lm.grad(-1)(ctx, trained, []int{drop}, g); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	f := sp.fit(gs, ds)
	cos, rel := f.agreement(lambda)
	cos0, rel0 := f.agreement(1e-9)
	t.Logf("lambda %.4g (spectrum %.3g..%.3g): cosine %.4f, relative error %.3f; undamped: cosine %.4f, relative error %.3f", lambda, sp.vals[0], sp.vals[P-1], cos, rel, cos0, rel0)
	if cos < 0.95 || rel > 0.35 {
		t.Errorf("budget-damped estimate against budgeted re-fits: cosine %.4f, relative error %.3f (want >= 0.95, <= 0.35)", cos, rel)
	}
	if rel0 < 2*rel {
		t.Errorf("the undamped estimate (relative error %.3f) is not clearly worse than the budget-damped one (%.3f): the test does not tell them apart", rel0, rel)
	}
	// The fitted damping does at least as well as the derived one.
	fl := f.lambda(mat.Trace(c) / P)
	if _, rf := f.agreement(fl); rf > rel+1e-9 {
		t.Errorf("fitted damping %g: relative error %.3f, above the derived one's %.3f", fl, rf, rel)
	}
}

// TestFitDampingRecovers: changes made exactly by (C + lambda* I)^-1 g_b
// give back lambda* (to the search's tolerance), agreement 1 and error 0.
func TestFitDampingRecovers(t *testing.T) {
	lm := newLinear(10, 2, 3, 11)
	c := lm.curvature(3)
	var e mat.EigenSym
	e.Factorize(c, true)
	sp := &spectrum{vals: e.Values(nil), vecs: &mat.Dense{}}
	e.VectorsTo(sp.vecs)
	const want = 7.5
	var gs, ds [][]float64
	r := rand.New(rand.NewPCG(5, 5))
	for k := 0; k < 3; k++ {
		g := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		a := mat.NewSymDense(3, nil)
		a.CopySym(c)
		for i := 0; i < 3; i++ {
			a.SetSym(i, i, a.At(i, i)+want)
		}
		var d mat.VecDense
		if err := d.SolveVec(a, mat.NewVecDense(3, g)); err != nil {
			t.Fatal(err)
		}
		gs, ds = append(gs, g), append(ds, d.RawVector().Data)
	}
	f := sp.fit(gs, ds)
	got := f.lambda(mat.Trace(c) / 3)
	if math.Abs(got/want-1) > 1e-4 {
		t.Fatalf("fitted damping %g, want %g", got, want)
	}
	if cos, rel := f.agreement(got); cos < 1-1e-8 || rel > 1e-4 {
		t.Errorf("agreement at the fitted damping: cosine %g, relative error %g", cos, rel)
	}
}

func TestParseBudget(t *testing.T) {
	b, err := ParseBudget("epochs=24, lr=0.005,batch=16,optimizer=Adam")
	if err != nil {
		t.Fatal(err)
	}
	if b != (Budget{Optimizer: "adam", Epochs: 24, LR: 0.005, Batch: 16}) {
		t.Errorf("parsed %+v", b)
	}
	if b.Steps(36) != 24*3 {
		t.Errorf("steps %d, want 72", b.Steps(36))
	}
	for _, bad := range []string{"", "epochs=3", "lr=0.1", "epochs=3,lr=0.1,optimizer=rmsprop", "epochs=3,lr=-1", "epochs=x,lr=1", "epochs=3,lr=1,epochs=4", "epochs=3,lr=1,momentum=0.9", "epochs=3,lr=1,beta1=1"} {
		if _, err := ParseBudget(bad); err == nil || !strings.Contains(err.Error(), "training budget") {
			t.Errorf("ParseBudget(%q): error %v", bad, err)
		}
	}
}

func seqRange(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
