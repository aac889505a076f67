package audit

import (
	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// proximalProblem is the early-stopping estimate's view of the audit
// (Options.TrainBudget): one part per training sequence (p.parts).
func (p *problem) proximalProblem() *refit.ProximalProblem {
	parts, byseq := make([]hvp.Batch, len(p.train.Seqs)), make([]*group, len(p.train.Seqs))
	for _, gr := range p.parts {
		byseq[gr.seqs[0]] = gr
		parts[gr.seqs[0]] = hvp.Batch{Program: gr.prog, Inputs: gr.in, Target: gr.target, Weight: gr.weight}
	}
	labels := make([]string, len(p.scheme.Blocks))
	for b, blk := range p.scheme.Blocks {
		labels[b] = blk.Label
	}
	b := *p.opt.TrainBudget
	b.Seed = p.opt.Seed
	return &refit.ProximalProblem{Loss: p.opt.Loss, Ridge: p.opt.Ridge, Workers: p.workers, Parts: parts, Curvature: p.opt.Curvature,
		Weights: func(s, b int) []float64 { return p.blockWeights(byseq[s], b) }, Theta: p.theta, Init: p.opt.TrainInit,
		Labels: labels, Budget: b, Seed: p.opt.Seed}
}
