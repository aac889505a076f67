package cli

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/audit/refit"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// trainBudget reads --train-budget into the options (nil without it).
func (p *plan) trainBudget() error {
	if p.f.trainBudget == "" {
		return nil
	}
	b, err := refit.ParseBudget(p.f.trainBudget)
	if err != nil {
		return usagef("--train-budget: %v", err)
	}
	if p.f.params != "" {
		return usagef("--train-budget with --params: the early-stopping estimate re-trains every parameter; drop --params")
	}
	p.opt.TrainBudget = &b
	return nil
}

// loadTrainInit takes the training budget the model file records when
// --train-budget is not given, and reads --train-init, the same model's
// weights before training, into the options: its parameters must be the
// model's g (names and sizes).
func (p *plan) loadTrainInit(g *graph.Graph) error {
	if p.opt.TrainBudget == nil && g.TrainBudget != "" {
		b, err := refit.ParseBudget(g.TrainBudget)
		if err != nil {
			return fmt.Errorf("%s: the training budget recorded at export (metadata %s): %v; give --train-budget", p.f.model, graph.TrainBudgetKey, err)
		}
		if p.f.params != "" {
			return usagef("%s records its training budget, and the early-stopping estimate re-trains every parameter; drop --params", p.f.model)
		}
		p.opt.TrainBudget = &b
	}
	if p.f.trainInit == "" {
		return nil
	}
	if p.opt.TrainBudget == nil {
		return usagef("--train-init needs --train-budget (or a model that records its budget): the weights training started from are for re-training with the budget")
	}
	g0, _, err := onnx.LoadOutput(p.f.trainInit, p.output)
	if err != nil {
		return err
	}
	ps, ps0 := g.Params(), g0.Params()
	if len(ps) != len(ps0) || g.NumParams() != g0.NumParams() {
		return fmt.Errorf("%s: %d parameters in %d tensors, the model %s %d in %d: give the same model exported before training", p.f.trainInit, g0.NumParams(), len(ps0), p.f.model, g.NumParams(), len(ps))
	}
	for i := range ps {
		if ps[i].Name != ps0[i].Name {
			return fmt.Errorf("%s: parameter %d is %q, the model's is %q: give the same model exported before training", p.f.trainInit, i+1, ps0[i].Name, ps[i].Name)
		}
	}
	p.opt.TrainInit = g0.Theta()
	return nil
}
