package audit

import (
	"context"

	"github.com/rnnaudit/rnnaudit/internal/par"
)

// trainOutputs are the trained model's outputs at theta_hat on the
// training batches: fx[gi] is batch p.groups[gi]'s first output, in the
// batch's output layout (problem.io.index). The checks after the
// influence phase (the in-sample residuals, the scheme advice) and the
// low-rank path's terms (termStore) all read these outputs; one pass
// computes them for all (at a million LSTM sequences each pass of its own
// was about a hundred CPU seconds, on one core).
type trainOutputs [][]float64

// trainOutputs runs the trained model on every training batch
// (problem.outputs of p.groups).
func (p *problem) trainOutputs(ctx context.Context) (trainOutputs, error) {
	return p.outputs(ctx, p.groups)
}

// outputs runs the trained model on the batches groups, shared out among
// p.workers goroutines, and returns each batch's first output. Each
// batch runs on a State made as a batch evaluated alone would make it
// (not serial) and reused for the worker's next batch of the same
// program, so that the outputs are the same floats whichever batches
// run where: in a self-audit a point's in-sample residual and its |y -
// prediction| are equal. The States come from p.pool when p has one.
func (p *problem) outputs(ctx context.Context, groups []*group) ([][]float64, error) {
	fx := make([][]float64, len(groups))
	pool := p.pool
	if pool == nil {
		pool = &statePool{}
	}
	err := par.For(ctx, len(groups), p.workers, func(w, gi int) error {
		gr := groups[gi]
		st := pool.State(w, gr.prog)
		st.SetSerial(false) // as a State of its own: the objective's are serial
		outs, err := st.Forward(p.theta, gr.in)
		if err != nil {
			return err
		}
		fx[gi] = append([]float64(nil), outs[0].F...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return fx, nil
}
