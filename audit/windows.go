package audit

import (
	"context"
	"math"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// windows replaces p's training, evaluated and calibration series by
// their sliding windows of Options.Window rows (blocks.CutWindows: the
// test series continued from the training series, one window per test
// row) and builds the window blocks, of Options.BlockLength rows or of a
// length chosen from the autocorrelation of the in-sample residuals.
func (p *problem) windows() (err error) {
	o := &p.opt
	if p.io.PerStep() {
		return errs.Fix([]Option{OptWindow}, "audit: windows of %d rows are cut for a many-to-one model, and output %q forecasts at every step: audit the long series without a window", o.Window, p.io.OutputName())
	}
	for _, d := range []**blocks.Dataset{&p.train, &p.eval, &p.cal} {
		if *d != nil && !(p.self && d == &p.eval) {
			if *d, err = blocks.CutWindows(*d, o.Window, p.io.Horizons()); err != nil {
				return err
			}
		}
	}
	if p.self {
		p.eval = p.train
	}
	k, why := o.BlockLength, ""
	if k <= 0 {
		if p.groups, err = p.makeGroups(p.train, wholeBatch); err != nil {
			return err
		}
		fx, err := p.trainOutputs(context.Background())
		if err != nil {
			return err
		}
		k, why = blocks.WindowBlockLength(p.train, p.firstResiduals(fx))
	}
	if p.scheme, err = blocks.NewScheme(p.train, blocks.Windows, k); err == nil && why != "" {
		p.scheme.Notes = append(p.scheme.Notes, why)
	}
	return err
}

// firstResiduals returns each training sequence's in-sample residual y -
// f at its first forecast with a target, from the model's outputs fx on
// the training batches; NaN for a sequence without one.
func (p *problem) firstResiduals(fx trainOutputs) []float64 {
	res := make([]float64, p.train.Len())
	for i := range res {
		res[i] = math.NaN()
	}
	for gi, gr := range p.groups {
		for b, i := range gr.seqs {
			for _, f := range p.io.Forecasts(gr.T) {
				if q := p.io.Index(len(gr.seqs), gr.T, b, f.T, f.H); gr.weight[q] != 0 {
					res[i] = gr.target[q] - fx[gi][q]
					break
				}
			}
		}
	}
	return res
}
