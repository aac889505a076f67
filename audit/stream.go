package audit

// Streaming passes over a dataset's sequences: per-sequence gradients
// and output-Jacobian rows batch by batch (rowStream). Sums of per-batch
// vectors that must not depend on the batches' order are GradientSums.

import (
	"context"
	"sync"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// rowStream streams, batch by batch of a dataset's sequences, every
// sequence's loss gradient and its output-Jacobian rows (one per forecast
// position) to a function of the whole batch (hvp.Objective.
// StreamPerExampleGradients: one gradient job and one Outputs job per
// forecast position per batch, assembled as they arrive). Only the
// batches in flight are held.
type rowStream struct {
	p      *problem
	groups []*group
	obj    *hvp.Objective
	mu     sync.Mutex
	free   [][]float64 // rows of length P to reuse
}

// newRowStream batches d's sequences by length, at most size per batch.
func newRowStream(p *problem, d *blocks.Dataset, size int) (*rowStream, error) {
	gs, err := p.makeGroups(d, size)
	if err != nil {
		return nil, err
	}
	return newGroupStream(p, gs), nil
}

// newGroupStream streams the batches gs.
func newGroupStream(p *problem, gs []*group) *rowStream {
	s := &rowStream{p: p, groups: gs, obj: p.objective(gs)}
	for c := range s.obj.Batches {
		s.obj.Batches[c].ExampleAxes = p.io.ExampleAxes()
	}
	return s
}

// batchFunc receives batch c (group gr) of a rowStream: grads[b][0] the
// loss gradient of its sequence b (when asked for) and rows[b][k] the
// gradient of its output at forecast position k (when asked for). The
// slices are reused after it returns: it must not keep them.
type batchFunc func(c int, gr *group, grads, rows [][][]float64) error

// run streams the batches to f (concurrently, up to the workers; see
// batchFunc), with the gradients when grad and the Jacobian rows when
// rows.
func (s *rowStream) run(ctx context.Context, grad, rows bool, f batchFunc) error {
	p := s.p
	type jobOf struct{ batch, pos int } // pos -1: the gradient
	var jobs []hvp.Job
	var which []jobOf
	masks := map[[3]int][]float64{}
	for c, gr := range s.groups {
		if grad {
			jobs = append(jobs, hvp.Job{Batch: c})
			which = append(which, jobOf{c, -1})
		}
		if !rows {
			continue
		}
		B := len(gr.seqs)
		for k, fc := range p.io.Forecasts(gr.T) {
			key := [3]int{B, gr.T, k}
			w, ok := masks[key]
			if !ok {
				w = make([]float64, len(gr.weight))
				for b := 0; b < B; b++ {
					w[p.io.Index(B, gr.T, b, fc.T, fc.H)] = 1
				}
				masks[key] = w
			}
			jobs = append(jobs, hvp.Job{Batch: c, Weight: w, Outputs: true})
			which = append(which, jobOf{c, k})
		}
	}
	type asm struct {
		left        int
		grads, rows [][][]float64
	}
	pending := map[int]*asm{}
	P := len(p.theta)
	return s.obj.StreamPerExampleGradients(ctx, p.theta, jobs, func(_, job int, g [][]float64, _ []float64) error {
		jw := which[job]
		gr := s.groups[jw.batch]
		if grad && !rows {
			// One job per batch: f reads the worker's buffers, which
			// stay untouched until it returns, without a copy (8.8 MB
			// per batch of 64 on the 64-unit LSTM).
			grads := make([][][]float64, len(gr.seqs))
			for b := range grads {
				grads[b] = g[b : b+1 : b+1]
			}
			return f(jw.batch, gr, grads, nil)
		}
		s.mu.Lock()
		a, ok := pending[jw.batch]
		if !ok {
			a = &asm{}
			nf := 0
			if rows {
				nf = len(p.io.Forecasts(gr.T))
				a.rows = make([][][]float64, len(gr.seqs))
			}
			if grad {
				a.grads = make([][][]float64, len(gr.seqs))
				a.left++
			}
			a.left += nf
			for b := range gr.seqs {
				if grad {
					a.grads[b] = [][]float64{s.get(P)}
				}
				if rows {
					a.rows[b] = make([][]float64, nf)
					for k := range a.rows[b] {
						a.rows[b][k] = s.get(P)
					}
				}
			}
			pending[jw.batch] = a
		}
		s.mu.Unlock()
		for b := range gr.seqs {
			if jw.pos < 0 {
				copy(a.grads[b][0], g[b])
			} else {
				copy(a.rows[b][jw.pos], g[b])
			}
		}
		s.mu.Lock()
		a.left--
		complete := a.left == 0
		if complete {
			delete(pending, jw.batch)
		}
		s.mu.Unlock()
		if !complete {
			return nil
		}
		err := f(jw.batch, gr, a.grads, a.rows)
		s.mu.Lock()
		for _, v := range a.grads {
			s.free = append(s.free, v...)
		}
		for _, v := range a.rows {
			s.free = append(s.free, v...)
		}
		s.mu.Unlock()
		return err
	})
}

// get returns a row of length P, reused when one is free (under s.mu).
func (s *rowStream) get(P int) []float64 {
	if n := len(s.free); n > 0 {
		v := s.free[n-1]
		s.free = s.free[:n-1]
		return v
	}
	return make([]float64, P)
}
