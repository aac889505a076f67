package audit

import (
	"context"
	"iter"
	"math"

	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// adviseScheme measures the shape of p's training data and the lag-1
// autocorrelation of the model's in-sample training residuals, from the
// model's outputs fx on the training batches (problem.trainOutputs), and
// returns the advice.
func adviseScheme(ctx context.Context, p *problem, fx trainOutputs) (*datacheck.SchemeAdvice, error) {
	a := datacheck.NewSchemeAdvice(p.train, p.scheme)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.Lag1, a.Pairs = lag1Runs(residualRuns(p, fx))
	a.Correlated = a.Pairs > 0 && math.Abs(a.Lag1) > minCorrelation && math.Abs(a.Lag1) > 2/math.Sqrt(float64(a.Pairs))
	a.Decide(p.opt.Alpha, DependenceLevel)
	return a, nil
}

// residualRuns yields the runs of the model's in-sample training
// residuals y - f at the first horizon (from its outputs fx on the
// training batches), by batch, sequence and row: a sequence's
// consecutive forecast rows with a target, a row without one ending a
// run. The slice yielded is reused for the next run. The scheme advice
// correlates them without holding them (a million sequences' series were
// a million small slices).
func residualRuns(p *problem, fx trainOutputs) iter.Seq[[]float64] {
	return func(yield func([]float64) bool) {
		var r []float64
		for gi, gr := range p.groups {
			fs := p.io.Forecasts(gr.T)
			h0 := math.MaxInt
			for _, f := range fs {
				h0 = min(h0, f.H)
			}
			B := len(gr.seqs)
			for b := range gr.seqs {
				r = r[:0]
				last := -2
				for _, f := range fs {
					if f.H != h0 {
						continue
					}
					q := p.io.Index(B, gr.T, b, f.T, f.H)
					if gr.weight[q] == 0 {
						continue
					}
					if f.T != last+1 && len(r) > 0 {
						// A gap (a row without a target) ends a run.
						if !yield(r) {
							return
						}
						r = r[:0]
					}
					t, y := p.at(gr, fx[gi], q)
					r = append(r, t-y)
					last = f.T
				}
				if len(r) > 0 && !yield(r) {
					return
				}
			}
		}
	}
}

// lag1Runs is num.Lag1: the pooled lag-1 autocorrelation of the runs
// runs yields.
func lag1Runs(runs iter.Seq[[]float64]) (float64, int) { return num.Lag1(runs) }
