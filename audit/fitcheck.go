package audit

import (
	"context"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// ridgeMismatch reports whether another ridge explains the training
// gradient of f much better than the given one (ridgeGain) and differs
// from it by more than a factor of ridgeApart, unless some tensors look
// untrained: their gradient is what another ridge would "explain".
func ridgeMismatch(f *datacheck.FitCheck) bool {
	if math.IsNaN(f.FittedGradNorm) || !(f.GradNorm > 0) || len(f.Untrained) > 0 {
		return false
	}
	lo, hi := math.Min(f.Ridge, f.FittedRidge), math.Max(f.Ridge, f.FittedRidge)
	return f.FittedGradNorm < ridgeGain*f.GradNorm && hi > ridgeApart*lo
}

// fitSequences bounds the training sequences the column check runs on:
// one forward pass per mapping over at most this many.
const fitSequences = 2000

// checkFit measures datacheck.FitCheck: one forward pass over (at most
// fitSequences of) the training data per order of the features
// (datacheck.Permutations), and, unless total is nil, the ridge fit from the total training gradient total (with the given
// ridge). fx, when not nil, are the model's outputs on p.groups
// (trainOutputs), which serve when those are all the training sequences
// checked. The shifted targets reuse the outputs of the data as read: a
// shift changes the targets, not the inputs.
func checkFit(ctx context.Context, p *problem, total []float64, fx trainOutputs) (*datacheck.FitCheck, error) {
	train := p.train
	sub := *train
	groups := p.groups
	if len(sub.Seqs) > fitSequences {
		sub.Seqs = sub.Seqs[:fitSequences]
		fx = nil
	}
	f := &datacheck.FitCheck{Sequences: len(sub.Seqs), Ridge: p.opt.Ridge, GradNorm: math.NaN(), FittedRidge: math.NaN(), FittedGradNorm: math.NaN()}
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
	for _, perm := range datacheck.Permutations(len(train.Features)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		names := make([]string, len(perm))
		for i, j := range perm {
			names[i] = train.Features[j]
		}
		r, err := p.trainingRMSE(ctx, datacheck.Permuted(&sub, perm))
		if err != nil {
			// An order the model's inputs cannot take (a real number
			// in an integer input of category codes): not an
			// alternative.
			continue
		}
		f.Alternatives = append(f.Alternatives, datacheck.Alternative{Features: names, Shift: train.Shift, RMSE: r})
	}
	for _, s := range []int{train.Shift - 1, train.Shift + 1} {
		// A feature as target at shift 0 is a value the model reads: no alternative.
		if s < 0 || len(train.Targets) == 0 || s == 0 && slices.Contains(train.Features, train.Targets[0]) {
			continue
		}
		f.Alternatives = append(f.Alternatives, datacheck.Alternative{Shift: s, RMSE: p.rmse(datacheck.Shifted(&sub, s), groups, fx)})
	}
	if total != nil {
		f.GradNorm = num.Norm(total)
		ts := make([]datacheck.Tensor, len(p.g.Params()))
		for i, prm := range p.g.Params() {
			ts[i] = datacheck.Tensor{Name: prm.Name, Offset: prm.Offset, Size: prm.Size}
		}
		f.Untrained = datacheck.UntrainedTensors(ts, total, untrainedRatio)
		f.FitRidge(p.theta, total, p.opt.Ridge)
	}
	f.Ridge, f.FittedRidge = f.Ridge/p.opt.targetVar(), f.FittedRidge/p.opt.targetVar()
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
