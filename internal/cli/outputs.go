package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// outputFitSequences bounds the training sequences on which each of a model's
// outputs is compared with the targets: one forward pass per sequence
// and output.
const outputFitSequences = 50

// outputFit is how one output of the model fits the training targets:
// the RMSE of its forecasts over n targets, or why it cannot be read as
// a forecast of them.
type outputFit struct {
	name string
	rmse float64
	n    int
	err  error
}

// text says how the output fits, for the summary.
func (o outputFit) text() string {
	if o.err != nil {
		msg, _ := words(o.err) // options named as the flags that fix them
		return fmt.Sprintf("%s (does not fit: %s)", o.name, strings.TrimPrefix(firstLine(msg), "audit: "))
	}
	if o.n == 0 {
		return fmt.Sprintf("%s (no training target where it forecasts)", o.name)
	}
	return fmt.Sprintf("%s (training RMSE %.4g over %d targets)", o.name, o.rmse, o.n)
}

// chooseOutput picks the forecast among several outputs when --output
// names none: a model often returns more than its forecast (attention
// weights, a hidden state), and auditing its first output would audit
// something it was never trained to forecast. Each output that reads as
// a forecast ([batch, time, ...] or [batch, ...], against the layout and
// --horizons) is run on the first training sequences; the one with the
// smallest RMSE against their targets, the forecast the training fitted,
// is loaded in place of g. It returns the graph and pruning to audit and
// a line saying which output was chosen, with how each fits ("" when
// --output names one or the model has one output). None fitting is an
// error naming --output.
func (p *plan) chooseOutput(g *graph.Graph, pruned *onnx.Pruned, train *blocks.Dataset) (*graph.Graph, *onnx.Pruned, string, error) {
	if p.output != "" || pruned == nil || len(pruned.Outputs) == 0 {
		return g, pruned, "", nil
	}
	names := []string{g.Outputs[0].Name}
	for _, o := range pruned.Outputs {
		names = append(names, o.Name)
	}
	fits := make([]outputFit, len(names))
	best := -1
	for i, name := range names {
		fits[i] = outputFit{name: name, rmse: math.NaN()}
		gi := g
		if i > 0 {
			var err error
			if gi, _, err = onnx.LoadOutput(p.f.model, name); err != nil {
				fits[i].err = err
				continue
			}
		}
		io, err := modelio.New(gi, modelio.Config{Layout: p.opt.Layout, Inputs: p.opt.Inputs, Horizons: p.opt.Horizons}, train.Features)
		if err == nil {
			fits[i].rmse, fits[i].n, err = io.RMSE(train.Seqs, outputFitSequences)
		}
		if err != nil {
			fits[i].err = err
			continue
		}
		if fits[i].n > 0 && (best < 0 || fits[i].rmse < fits[best].rmse) {
			best = i
		}
	}
	var parts []string
	for i, f := range fits {
		if i != best {
			parts = append(parts, f.text())
		}
	}
	if best < 0 {
		return nil, nil, "", usagef("%s has %d outputs and none reads as a forecast of the training targets (%s): name the forecast with --output NAME (or NAME:K for column K of its last axis)",
			p.f.model, len(names), strings.Join(parts, "; "))
	}
	line := fmt.Sprintf("Forecast output: %s, chosen among the model's %d outputs as the one that fits the training targets best (training RMSE %.4g over %d targets of the first %d sequences); not audited: %s. Name another with --output.",
		names[best], len(names), fits[best].rmse, fits[best].n, min(len(train.Seqs), outputFitSequences), strings.Join(parts, "; "))
	if best == 0 {
		return g, pruned, line, nil
	}
	p.output = names[best]
	p.opt.Output = names[best]
	g, pruned, err := p.loadModel()
	if err != nil {
		return nil, nil, "", err
	}
	return g, pruned, line, nil
}
