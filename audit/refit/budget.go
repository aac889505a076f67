package refit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// Budget is how a model was trained, as its user states it: the
// optimizer, its learning rate, the mini-batch size in sequences and
// the number of epochs that produced the weights kept (for a model
// stopped early, the best epoch, not the epochs run). Budgeted re-fits
// (Train) re-train that way, and the proximal damping (GDDamping, or
// fitted by ProximalProblem.Damping) stands for it (docs/design.md,
// "Models stopped early").
type Budget struct {
	// Optimizer is "sgd" (plain mini-batch gradient descent) or "adam"
	// (PyTorch's Adam, with weight decay added to the gradient).
	Optimizer string
	// Epochs is the number of passes over the training sequences.
	Epochs int
	// LR is the learning rate on the mean loss of a mini-batch.
	LR float64
	// Batch is the number of sequences in a mini-batch; 0 means all
	// (full-batch gradient descent).
	Batch int
	// Beta1, Beta2 and Eps are Adam's (0: PyTorch's defaults 0.9,
	// 0.999 and 1e-8).
	Beta1, Beta2, Eps float64
	// Damping is how the early-stopping estimate's damping is chosen:
	// "derived" (GDDamping), "fitted" (to budgeted re-fits of Fit
	// blocks), or "" for fitted with adam and derived with sgd.
	Damping string
	// Fit is the number of blocks re-fitted to fit the damping (0:
	// FitBlocks).
	Fit int
	// Seed draws the order of the sequences in each epoch, the same for
	// every re-fit of one audit, so that re-fits differ by their data
	// only.
	Seed uint64
}

// ParseBudget reads a budget from "key=value" pairs separated by commas:
// epochs (required), lr (required), batch, optimizer (sgd or adam; adam
// when omitted), beta1, beta2, eps, damping (derived or fitted) and fit
// (the blocks re-fitted to fit it), for example
// "epochs=24,lr=0.005,batch=16,optimizer=adam".
func ParseBudget(s string) (Budget, error) {
	b := Budget{Optimizer: "adam"}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return Budget{}, fmt.Errorf("training budget %q: %q is not key=value (keys: epochs, lr, batch, optimizer, beta1, beta2, eps, damping, fit)", s, kv)
		}
		if seen[k] {
			return Budget{}, fmt.Errorf("training budget %q: %s given twice", s, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "optimizer":
			b.Optimizer = strings.ToLower(v)
			if b.Optimizer != "sgd" && b.Optimizer != "adam" {
				return Budget{}, fmt.Errorf("training budget %q: optimizer %q: give sgd or adam", s, v)
			}
		case "damping":
			b.Damping = strings.ToLower(v)
			if b.Damping != "derived" && b.Damping != "fitted" {
				return Budget{}, fmt.Errorf("training budget %q: damping %q: give derived or fitted", s, v)
			}
		case "epochs", "batch", "fit":
			var n int
			if n, err = strconv.Atoi(v); err == nil && n < 0 {
				err = fmt.Errorf("negative")
			}
			switch k {
			case "epochs":
				b.Epochs = n
			case "batch":
				b.Batch = n
			default:
				b.Fit = n
			}
		case "lr", "beta1", "beta2", "eps":
			var x float64
			if x, err = strconv.ParseFloat(v, 64); err == nil && !(x >= 0 && !math.IsInf(x, 0)) {
				err = fmt.Errorf("not a finite non-negative number")
			}
			switch k {
			case "lr":
				b.LR = x
			case "beta1":
				b.Beta1 = x
			case "beta2":
				b.Beta2 = x
			default:
				b.Eps = x
			}
		default:
			return Budget{}, fmt.Errorf("training budget %q: unknown key %q (keys: epochs, lr, batch, optimizer, beta1, beta2, eps, damping, fit)", s, k)
		}
		if err != nil {
			return Budget{}, fmt.Errorf("training budget %q: %s=%s: %v", s, k, v, err)
		}
	}
	if b.Epochs == 0 || !(b.LR > 0) {
		return Budget{}, fmt.Errorf("training budget %q: give epochs and lr (both positive), e.g. epochs=24,lr=0.005,batch=16,optimizer=adam", s)
	}
	if b.Beta1 >= 1 || b.Beta2 >= 1 {
		return Budget{}, fmt.Errorf("training budget %q: beta1 and beta2 must be below 1", s)
	}
	return b, nil
}

// String is the budget in ParseBudget's form.
func (b Budget) String() string {
	s := fmt.Sprintf("epochs=%d,lr=%g,batch=%d,optimizer=%s", b.Epochs, b.LR, b.Batch, b.Optimizer)
	if b.Damping != "" {
		s += ",damping=" + b.Damping
	}
	if b.Fit != 0 {
		s += fmt.Sprintf(",fit=%d", b.Fit)
	}
	return s
}

// fitted reports whether the damping is fitted to budgeted re-fits.
func (b Budget) fitted() bool {
	return b.Damping == "fitted" || b.Damping == "" && b.Optimizer == "adam"
}

// adam returns Adam's constants with PyTorch's defaults filled in.
func (b Budget) adam() (b1, b2, eps float64) {
	b1, b2, eps = b.Beta1, b.Beta2, b.Eps
	if b1 == 0 {
		b1 = 0.9
	}
	if b2 == 0 {
		b2 = 0.999
	}
	if eps == 0 {
		eps = 1e-8
	}
	return b1, b2, eps
}

// batches is the mini-batches of one epoch: the sequences 0..n-1 in the
// order rnd draws, cut into runs of b.Batch (all of them when 0).
func (b Budget) batches(rnd *rand.Rand, n int) [][]int {
	order := rnd.Perm(n)
	size := b.Batch
	if size <= 0 || size > n {
		size = n
	}
	var out [][]int
	for k := 0; k < n; k += size {
		out = append(out, order[k:min(k+size, n)])
	}
	return out
}

// Steps is the number of optimizer steps of the budget on n sequences.
func (b Budget) Steps(n int) int {
	size := b.Batch
	if size <= 0 || size > n {
		size = n
	}
	return b.Epochs * ((n + size - 1) / size)
}

// MinibatchGrad writes into g the gradient of the summed loss of the
// sequences seqs (without the ridge, and without the terms a re-fit
// leaves out) at theta and returns the number of loss terms of those
// sequences with the left-out ones: the mean's denominator, the same as
// in training on all the data, so that the terms left keep their weight
// (the weighted leave-block-out loss). 0 skips the step.
type MinibatchGrad func(ctx context.Context, theta []float64, seqs []int, g []float64) (terms int, err error)

// Train re-trains from start with the budget, as the user's training
// did: every step takes the mean gradient of one mini-batch's loss
// terms, plus decay times theta (PyTorch's weight_decay, the ridge per
// loss term of the summed objective), minus tilt when it is set, and
// moves by SGD or Adam (with bias correction, PyTorch's). The n
// sequences are shuffled each epoch with b.Seed, the same order for
// every re-fit: a re-fit without a block keeps the others' mini-batches
// as they were, less the block's terms, so that two re-fits differ by
// their data, not by their shuffles. It returns the final parameters.
func Train(ctx context.Context, grad MinibatchGrad, n int, start []float64, decay float64, tilt []float64, b Budget) ([]float64, error) {
	theta := slices.Clone(start)
	P := len(theta)
	g := make([]float64, P)
	var m, v []float64
	b1, b2, eps := b.adam()
	if b.Optimizer == "adam" {
		m, v = make([]float64, P), make([]float64, P)
	}
	rnd := rand.New(rand.NewPCG(b.Seed, 0x627564676574))
	t := 0
	for e := 0; e < b.Epochs; e++ {
		for _, seqs := range b.batches(rnd, n) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			clear(g)
			k, err := grad(ctx, theta, seqs, g)
			if err != nil {
				return nil, err
			}
			if k == 0 {
				continue
			}
			for i := range g {
				g[i] = g[i]/float64(k) + decay*theta[i]
				if tilt != nil {
					g[i] -= tilt[i]
				}
			}
			t++
			if m == nil {
				num.AddScaled(theta, -b.LR, g)
				continue
			}
			c1, c2 := 1-math.Pow(b1, float64(t)), 1-math.Pow(b2, float64(t))
			for i, gi := range g {
				m[i] = b1*m[i] + (1-b1)*gi
				v[i] = b2*v[i] + (1-b2)*gi*gi
				theta[i] -= b.LR * (m[i] / c1) / (math.Sqrt(v[i]/c2) + eps)
			}
		}
	}
	for _, x := range theta {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("budgeted re-training (%s) diverged: lower lr or check the budget", b)
		}
	}
	return theta, nil
}

// GDDamping is the proximal damping lambda of gradient descent with the
// budget, in the units of the summed loss over terms loss terms in n
// sequences: lambda = 1/T, T = epochs lr / mbar the total step size on
// the summed loss, mbar = terms batch / n the mean terms of a
// mini-batch. Gradient descent from theta_0 on a quadratic with
// curvature C for total step T moves theta_0 by
// (I - exp(-T C)) C^-1 times the force, which is (C + lambda I)^-1 for
// eigenvalues far from lambda on either side (docs/design.md, "Models
// stopped early"); an epoch of mini-batch steps of lr on the mean
// loss is, to first order in lr, one step of lr/mbar on the sum.
func GDDamping(b Budget, terms, n int) float64 {
	size := b.Batch
	if size <= 0 || size > n {
		size = n
	}
	mbar := float64(terms) * float64(size) / float64(n)
	return mbar / (float64(b.Epochs) * b.LR)
}
