package audit

import (
	"math"
	"sync"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// parallel runs f(w, k) for k in [0, n) on the run's workers (internal/par:
// the first error wins, cancellation stops new work, w names the worker).
func (r *run) parallel(n int, f func(w, k int) error) error {
	return par.For(r.ctx, n, r.workers, f)
}

// states caches one evaluation state per program for one worker.
type states map[*graph.Program]*graph.State

func (s states) get(p *graph.Program) *graph.State {
	st, ok := s[p]
	if !ok {
		st = p.NewState()
		st.SetSerial(true) // the audit's workers already run in parallel
		s[p] = st
	}
	return st
}

// residuals computes the leave-one-block-out residuals (DESIGN section 5):
// for every block b and every training forecast in its evaluation region,
// |y - f(x; theta_-b)| with a real forward pass; and the in-sample
// residuals |y - f(x; theta_hat)| for the naive intervals.
func (r *run) residuals() error { return r.residualsPhase("leave-one-block-out residuals") }

func (r *run) residualsPhase(phase string) error {
	partOf := make([]int, r.train.Len())
	for pi, gr := range r.parts {
		partOf[gr.seqs[0]] = pi
	}
	// Unperturbed outputs of every part.
	base := make([][]float64, len(r.parts))
	ws := make([]states, r.workers)
	for w := range ws {
		ws[w] = states{}
	}
	err := r.parallel(len(r.parts), func(w, k int) error {
		gr := r.parts[k]
		outs, err := ws[w].get(gr.prog).Forward(r.theta, gr.in)
		if err != nil {
			return err
		}
		base[k] = append([]float64(nil), outs[0].F...)
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.inSample(); err != nil {
		return err
	}

	bl := r.scheme.Blocks
	results := make([]blockRes, len(bl))
	thetas := make([][]float64, r.workers)
	done := 0
	var mu sync.Mutex
	err = r.parallel(len(bl), func(w, k int) error {
		if thetas[w] == nil {
			thetas[w] = make([]float64, len(r.theta))
		}
		th := thetas[w]
		for j := range th {
			th[j] = r.theta[j] + r.delta[k][j]
		}
		res := &results[k]
		if r.own != nil && r.own[k] != nil {
			// The Newton estimator's own-block residuals (sequence
			// blocks: the region is the block's own terms).
			ob := r.own[k]
			for a, t := range ob.terms {
				res.entries = append(res.entries, entry{blk: k, seq: ob.seq, r: ob.res[a]})
				res.keys = append(res.keys, t.f)
				res.shift += ob.shift[a]
				res.count++
			}
		} else if err := r.forwardResiduals(ws[w], th, bl[k].Region(r.train), k, partOf, base, res); err != nil {
			return err
		}
		mu.Lock()
		done++
		r.opt.progress(phase, done, len(bl))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	r.entries = map[forecast][]entry{}
	shifts := make([]float64, len(bl))
	for k, res := range results {
		for j, e := range res.entries {
			r.entries[res.keys[j]] = append(r.entries[res.keys[j]], e)
		}
		if res.count > 0 {
			shifts[k] = res.shift / float64(res.count)
		}
	}
	r.mostInfluential(shifts)
	return nil
}

// blockRes are one block's residual entries, their forecasts, and the sum
// and count of its prediction shifts.
type blockRes struct {
	entries []entry
	keys    []forecast
	shift   float64
	count   int
}

// forwardResiduals adds to res block k's residuals |y - f(x; th)| over
// its evaluation region, from forward passes on worker states ws.
func (r *run) forwardResiduals(ws states, th []float64, region []blocks.Span, k int, partOf []int, base [][]float64, res *blockRes) error {
	for _, sp := range region {
		pi := partOf[sp.Seq]
		gr := r.parts[pi]
		outs, err := ws.get(gr.prog).Forward(th, gr.in)
		if err != nil {
			return err
		}
		for _, f := range r.io.forecasts(gr.T) {
			row := f.T + f.H
			q := r.io.index(1, gr.T, 0, f.T, f.H)
			if row < sp.Lo || row >= sp.Hi || gr.weight[q] == 0 {
				continue
			}
			y := outs[0].F[q]
			res.entries = append(res.entries, entry{blk: k, seq: sp.Seq, r: math.Abs(gr.target[q] - y)})
			res.keys = append(res.keys, f)
			res.shift += math.Abs(y - base[pi][q])
			res.count++
		}
	}
	return nil
}

// inSample computes the in-sample residuals |y - f(x; theta_hat)| of the
// naive intervals from the same batched forward passes as the evaluated
// predictions, so that in a self-audit a point's own residual and its
// |y - prediction| are the same float.
func (r *run) inSample() error {
	r.naive = map[forecast][]float64{}
	for _, gr := range r.groups {
		s := gr.prog.NewState()
		outs, err := s.Forward(r.theta, gr.in)
		if err != nil {
			return err
		}
		B := len(gr.seqs)
		for b := range gr.seqs {
			for _, f := range r.io.forecasts(gr.T) {
				q := r.io.index(B, gr.T, b, f.T, f.H)
				if gr.weight[q] != 0 {
					r.naive[f] = append(r.naive[f], math.Abs(gr.target[q]-outs[0].F[q]))
				}
			}
		}
	}
	return nil
}

// mostInfluential lists the ten blocks with the largest parameter change.
func (r *run) mostInfluential(shifts []float64) {
	d := &r.res.Diag
	idx := make([]int, len(d.InfluenceNorms))
	for i := range idx {
		idx[i] = i
	}
	sortByDesc(idx, d.InfluenceNorms)
	for _, k := range idx[:min(10, len(idx))] {
		d.Influential = append(d.Influential, InfluenceEntry{Block: r.scheme.Blocks[k].Label, Norm: d.InfluenceNorms[k], PredShift: shifts[k]})
	}
}

func sortByDesc(idx []int, key []float64) {
	// Insertion-stable order: larger key first, ties by index.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && (key[idx[j]] > key[idx[j-1]] || (key[idx[j]] == key[idx[j-1]] && idx[j] < idx[j-1])); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

// perturbedPredictions evaluates the evaluation set, and the calibration
// set when there is one, with theta_hat + deltas[k] for every k and then
// with thetas[k]: out[k][p] is the prediction of evaluation point p, and
// out[k][len(r.points)+c] that of calibration point c.
func (r *run) perturbedPredictions(phase string, deltas [][]float64, thetas [][]float64) ([][]float64, error) {
	out := make([][]float64, len(deltas)+len(thetas))
	ws := make([]states, r.workers)
	bufs := make([][]float64, r.workers)
	for w := range ws {
		ws[w] = states{}
		bufs[w] = make([]float64, len(r.theta))
	}
	// The point sets, and the positions of their points in each group's
	// output.
	sets := []struct {
		groups  []*group
		points  []point
		off     int
		byGroup [][]int
	}{{groups: r.evalGroups, points: r.points}, {groups: r.calGroups, points: r.calPoints, off: len(r.points)}}
	for s := range sets {
		set := &sets[s]
		set.byGroup = make([][]int, len(set.groups))
		for p, pt := range set.points {
			set.byGroup[pt.group] = append(set.byGroup[pt.group], p)
		}
	}
	var mu sync.Mutex
	done := 0
	total := len(out)
	err := r.parallel(total, func(w, k int) error {
		th := bufs[w]
		if k < len(deltas) {
			for j := range th {
				th[j] = r.theta[j] + deltas[k][j]
			}
		} else {
			copy(th, thetas[k-len(deltas)])
		}
		pred := make([]float64, len(r.points)+len(r.calPoints))
		for _, set := range sets {
			for gi, gr := range set.groups {
				outs, err := ws[w].get(gr.prog).Forward(th, gr.in)
				if err != nil {
					return err
				}
				for _, p := range set.byGroup[gi] {
					pred[set.off+p] = outs[0].F[set.points[p].pos]
				}
			}
		}
		out[k] = pred
		mu.Lock()
		done++
		r.opt.progress(phase, done, total)
		mu.Unlock()
		return nil
	})
	return out, err
}
