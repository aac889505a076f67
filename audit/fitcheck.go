package audit

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// FitCheck is the audit's check that the data are given to the model the way
// it was trained: the training RMSE under the given column mapping
// (printed so that it can be compared with the training log), the same
// under the mapping's obvious alternatives (the features in another
// order, the target shifted by one row more or less), and the ridge that
// best explains the training gradient. A model far from a stationary
// point of its loss (Diagnostics.Stationarity) may be an ordinary
// mini-batch model or a mistake; these figures tell which.
type FitCheck struct {
	// Sequences is the number of training sequences the RMSEs are
	// measured on (the first fitSequences of the file).
	Sequences int
	// RMSE is the trained model's root mean squared error on the
	// training targets under the given mapping.
	RMSE float64
	// Alternatives are the other mappings tried, with their RMSE.
	Alternatives []Alternative
	// GradNorm is |grad L| with the given ridge Ridge; FittedRidge is the
	// ridge R >= 0 that minimises |grad L_data + R theta| and
	// FittedGradNorm that minimum. NaN when not measured (the low-rank
	// path does not keep the total gradient).
	Ridge          float64
	GradNorm       float64
	FittedRidge    float64
	FittedGradNorm float64
}

// Alternative is one column mapping other than the given one: the
// features in the order Features (nil: as given) and the target shift
// Shift, with the trained model's training RMSE under it.
type Alternative struct {
	Features []string
	Shift    int
	RMSE     float64
}

// Flags are the command-line flags that select the alternative, such as
// "--features b,a" or "--shift 0".
func (a Alternative) Flags() string {
	var out []string
	if a.Features != nil {
		out = append(out, "--features "+strings.Join(a.Features, ","))
	}
	out = append(out, fmt.Sprintf("--shift %d", a.Shift))
	return strings.Join(out, " ")
}

// BestAlternative is the alternative with the lowest RMSE, nil when none
// was tried.
func (f *FitCheck) BestAlternative() *Alternative {
	var best *Alternative
	for i := range f.Alternatives {
		if a := &f.Alternatives[i]; !math.IsNaN(a.RMSE) && (best == nil || a.RMSE < best.RMSE) {
			best = a
		}
	}
	return best
}

// RidgeMismatch reports whether another ridge explains the training
// gradient much better than the given one (ridgeGain) and differs from
// it by more than a factor of ridgeApart.
func (f *FitCheck) RidgeMismatch() bool {
	if math.IsNaN(f.FittedGradNorm) || !(f.GradNorm > 0) {
		return false
	}
	lo, hi := math.Min(f.Ridge, f.FittedRidge), math.Max(f.Ridge, f.FittedRidge)
	return f.FittedGradNorm < ridgeGain*f.GradNorm && hi > ridgeApart*lo
}

// fitSequences bounds the training sequences the column check runs on:
// one forward pass per mapping over at most this many.
const fitSequences = 2000

// maxPermuted is the most features whose every order is tried; up to
// maxSwapped every exchange of two features and the reversed order are,
// beyond it only the reversed order (one forward pass each).
const (
	maxPermuted = 3
	maxSwapped  = 8
)

// checkFit measures FitCheck: one forward pass over (at most fitSequences of)
// the training data per order of the features, and, unless total is nil,
// the ridge fit from the total training gradient total (with the given
// ridge). fx, when not nil, are the model's outputs on p.groups
// (trainOutputs), which serve when those are all the training sequences
// checked. The shifted targets reuse the outputs of the data as read: a
// shift changes the targets, not the inputs.
func checkFit(ctx context.Context, p *problem, total []float64, fx trainOutputs) (*FitCheck, error) {
	train := p.train
	sub := *train
	groups := p.groups
	if len(sub.Seqs) > fitSequences {
		sub.Seqs = sub.Seqs[:fitSequences]
		fx = nil
	}
	f := &FitCheck{Sequences: len(sub.Seqs), Ridge: p.opt.Ridge, GradNorm: math.NaN(), FittedRidge: math.NaN(), FittedGradNorm: math.NaN()}
	var err error
	if fx == nil {
		if groups, err = p.makeGroups(&sub, wholeBatch); err != nil {
			return nil, err
		}
		if fx, err = p.outputs(ctx, groups); err != nil {
			return nil, err
		}
	}
	f.RMSE = p.rmse(&sub, groups, fx)
	for _, perm := range permutations(len(train.Features)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		names := make([]string, len(perm))
		for i, j := range perm {
			names[i] = train.Features[j]
		}
		r, err := p.trainingRMSE(ctx, permuted(&sub, perm))
		if err != nil {
			// An order the model's inputs cannot take (a real number
			// in an integer input of category codes): not an
			// alternative.
			continue
		}
		f.Alternatives = append(f.Alternatives, Alternative{Features: names, Shift: train.Shift, RMSE: r})
	}
	for _, s := range []int{train.Shift - 1, train.Shift + 1} {
		if s < 0 || len(train.Targets) == 0 {
			continue
		}
		f.Alternatives = append(f.Alternatives, Alternative{Shift: s, RMSE: p.rmse(shifted(&sub, s), groups, fx)})
	}
	if total != nil {
		f.GradNorm = num.Norm(total)
		// grad L_data = total - R theta; |g + R' theta| is least at
		// R' = -(g . theta) / |theta|^2, clamped at 0.
		var gt, tt float64
		for i, th := range p.theta {
			g := total[i] - p.opt.Ridge*th
			gt += g * th
			tt += th * th
		}
		if tt > 0 {
			f.FittedRidge = math.Max(0, -gt/tt)
			var ss float64
			for i, th := range p.theta {
				g := total[i] - p.opt.Ridge*th + f.FittedRidge*th
				ss += g * g
			}
			f.FittedGradNorm = math.Sqrt(ss)
		}
	}
	return f, nil
}

// trainingRMSE is the trained model's RMSE over the targets of d.
func (p *problem) trainingRMSE(ctx context.Context, d *blocks.Dataset) (float64, error) {
	groups, err := p.makeGroups(d, wholeBatch)
	if err != nil {
		return math.NaN(), err
	}
	fx, err := p.outputs(ctx, groups)
	if err != nil {
		return math.NaN(), err
	}
	return p.rmse(d, groups, fx), nil
}

// rmse is the RMSE over the targets of d of the outputs fx of its
// batches groups (NaN without a target), summed in the order of
// eachPoint.
func (p *problem) rmse(d *blocks.Dataset, groups []*group, fx [][]float64) float64 {
	var ss float64
	n := 0
	p.eachPoint(d, groups, fx, func(pt point) {
		if pt.has {
			ss += (pt.y - pt.pred) * (pt.y - pt.pred)
			n++
		}
	})
	if n == 0 {
		return math.NaN()
	}
	return math.Sqrt(ss / float64(n))
}

// permutations lists the orders of d features other than the identity
// worth trying: every one up to maxPermuted features, else every
// exchange of two (up to maxSwapped) and the reversed order.
func permutations(d int) [][]int {
	if d < 2 {
		return nil
	}
	if d > maxPermuted {
		var out [][]int
		if d <= maxSwapped {
			for i := range d {
				for j := i + 1; j < d; j++ {
					sw := make([]int, d)
					for k := range sw {
						sw[k] = k
					}
					sw[i], sw[j] = j, i
					out = append(out, sw)
				}
			}
		}
		rev := make([]int, d)
		for i := range rev {
			rev[i] = d - 1 - i
		}
		return append(out, rev)
	}
	var out [][]int
	var rec func(cur []int, used []bool)
	rec = func(cur []int, used []bool) {
		if len(cur) == d {
			for i, j := range cur {
				if i != j {
					out = append(out, append([]int(nil), cur...))
					return
				}
			}
			return
		}
		for j := range d {
			if !used[j] {
				used[j] = true
				rec(append(cur, j), used)
				used[j] = false
			}
		}
	}
	rec(nil, make([]bool, d))
	return out
}

// permuted is d with each row's features taken in the order perm
// (feature i of the copy is feature perm[i] of d).
func permuted(d *blocks.Dataset, perm []int) *blocks.Dataset {
	out := *d
	out.Features = make([]string, len(perm))
	for i, j := range perm {
		out.Features[i] = d.Features[j]
	}
	out.Seqs = make([]*blocks.Sequence, len(d.Seqs))
	for k, s := range d.Seqs {
		c := *s
		c.X = make([][]float64, len(s.X))
		for t, x := range s.X {
			row := make([]float64, len(perm))
			for i, j := range perm {
				row[i] = x[j]
			}
			c.X[t] = row
		}
		out.Seqs[k] = &c
	}
	return &out
}

// shifted is d with the targets read with shift s instead of d.Shift:
// row t's target is the one row t+s-d.Shift had (none where that row is
// outside the sequence, and none for rows the file's shift already
// left without one).
func shifted(d *blocks.Dataset, s int) *blocks.Dataset {
	out := *d
	out.Shift = s
	out.Seqs = make([]*blocks.Sequence, len(d.Seqs))
	for k, q := range d.Seqs {
		c := *q
		if q.Y != nil {
			c.Y = make([][]float64, len(q.Y))
			for t := range c.Y {
				if u := t + s - d.Shift; u >= 0 && u < len(q.Y) {
					c.Y[t] = q.Y[u]
				}
			}
		}
		out.Seqs[k] = &c
	}
	return &out
}
