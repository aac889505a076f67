package audit

import (
	"context"
	"math"
	"sync"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/num"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

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

func newStates(n int) []states {
	ws := make([]states, n)
	for w := range ws {
		ws[w] = states{}
	}
	return ws
}

// looResiduals are the residual phase's output: the leave-one-block-out
// residuals by forecast (row, horizon), the sets V± of docs/design.md,
// section 5.2, and per block the mean |f(x; theta_-b) - f(x; theta_hat)| over
// its evaluation region.
type looResiduals struct {
	entries map[forecast][]interval.Residual
	shift   []float64
}

// blockResiduals is the residual phase (docs/design.md, section 5.1): for every
// block b and every training forecast in its evaluation region, |y -
// f(x; theta_hat + delta[b])| from a real forward pass, or the block's own
// linearised residuals own[b] where own and own[b] are non-nil (the Newton
// estimator). phase names the progress reports.
func blockResiduals(ctx context.Context, p *problem, delta [][]float64, own []*ownBlock, phase string) (*looResiduals, error) {
	partOf := make([]int, p.train.Len())
	for pi, gr := range p.parts {
		partOf[gr.seqs[0]] = pi
	}
	// Unperturbed outputs of every part.
	base := make([][]float64, len(p.parts))
	ws := newStates(p.workers)
	err := par.For(ctx, len(p.parts), p.workers, func(w, k int) error {
		gr := p.parts[k]
		outs, err := ws[w].get(gr.prog).Forward(p.theta, gr.in)
		if err != nil {
			return err
		}
		base[k] = append([]float64(nil), outs[0].F...)
		return nil
	})
	if err != nil {
		return nil, err
	}

	bl := p.scheme.Blocks
	results := make([]blockRes, len(bl))
	thetas := make([][]float64, p.workers)
	done := 0
	var mu sync.Mutex
	err = par.For(ctx, len(bl), p.workers, func(w, k int) error {
		if thetas[w] == nil {
			thetas[w] = make([]float64, len(p.theta))
		}
		th := thetas[w]
		for j := range th {
			th[j] = p.theta[j] + delta[k][j]
		}
		res := &results[k]
		if own != nil && own[k] != nil {
			// The Newton estimator's own-block residuals: the
			// block's terms in its evaluation region.
			ob := own[k]
			for a, t := range ob.terms {
				res.entries = append(res.entries, interval.Residual{Blk: k, Seq: t.seq, R: ob.res[a]})
				res.keys = append(res.keys, t.f)
				res.shift += ob.shift[a]
				res.count++
			}
		} else if err := forwardResiduals(p, ws[w], th, bl[k].Region(p.train), k, partOf, base, res); err != nil {
			return err
		}
		mu.Lock()
		done++
		p.opt.progress(phase, done, len(bl))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Each forecast's entries counted first, so that every list is one
	// allocation of its size.
	count := map[forecast]int{}
	for _, res := range results {
		for _, f := range res.keys {
			count[f]++
		}
	}
	out := &looResiduals{entries: make(map[forecast][]interval.Residual, len(count)), shift: make([]float64, len(bl))}
	for f, c := range count {
		out.entries[f] = make([]interval.Residual, 0, c)
	}
	for k, res := range results {
		for j, e := range res.entries {
			out.entries[res.keys[j]] = append(out.entries[res.keys[j]], e)
		}
		if res.count > 0 {
			out.shift[k] = res.shift / float64(res.count)
		}
	}
	return out, nil
}

// blockRes are one block's residual entries, their forecasts, and the sum
// and count of its prediction shifts.
type blockRes struct {
	entries []interval.Residual
	keys    []forecast
	shift   float64
	count   int
}

// forwardResiduals adds to res block k's residuals |y - f(x; th)| over
// its evaluation region, from forward passes on worker states ws.
func forwardResiduals(p *problem, ws states, th []float64, region []blocks.Span, k int, partOf []int, base [][]float64, res *blockRes) error {
	if res.entries == nil {
		// At most one entry per forecast of the region's sequences.
		n := 0
		for _, sp := range region {
			n += len(p.io.Forecasts(p.parts[partOf[sp.Seq]].T))
		}
		res.entries, res.keys = make([]interval.Residual, 0, n), make([]forecast, 0, n)
	}
	for _, sp := range region {
		pi := partOf[sp.Seq]
		gr := p.parts[pi]
		outs, err := ws.get(gr.prog).Forward(th, gr.in)
		if err != nil {
			return err
		}
		for _, f := range p.io.Forecasts(gr.T) {
			row := f.T + f.H
			q := p.io.Index(1, gr.T, 0, f.T, f.H)
			if row < sp.Lo || row >= sp.Hi || gr.weight[q] == 0 {
				continue
			}
			t, y := p.at(gr, outs[0].F, q)
			_, y0 := p.at(gr, base[pi], q)
			res.entries = append(res.entries, interval.Residual{Blk: k, Seq: sp.Seq, R: math.Abs(t - y)})
			res.keys = append(res.keys, f)
			res.shift += math.Abs(y - y0)
			res.count++
		}
	}
	return nil
}

// inSampleResiduals are the in-sample residuals |y - f(x; theta_hat)| of
// the naive intervals by forecast, from the model's outputs fx on the
// training batches (problem.trainOutputs): the same batched forward
// passes as the evaluated predictions, so that in a self-audit a point's
// own residual and its |y - prediction| are the same float.
func inSampleResiduals(p *problem, fx trainOutputs) map[forecast][]float64 {
	// Each forecast's residuals counted first, so that every list is
	// one allocation (appends to a million made twice the garbage).
	count := map[forecast]int{}
	for _, gr := range p.groups {
		B := len(gr.seqs)
		for _, f := range p.io.Forecasts(gr.T) {
			c := 0
			for b := range B {
				if gr.weight[p.io.Index(B, gr.T, b, f.T, f.H)] != 0 {
					c++
				}
			}
			if c > 0 { // a forecast without terms has no list
				count[f] += c
			}
		}
	}
	naive := make(map[forecast][]float64, len(count))
	for f, c := range count {
		naive[f] = make([]float64, 0, c)
	}
	for gi, gr := range p.groups {
		B := len(gr.seqs)
		fs := p.io.Forecasts(gr.T)
		for b := range gr.seqs {
			for _, f := range fs {
				q := p.io.Index(B, gr.T, b, f.T, f.H)
				if t, y := p.at(gr, fx[gi], q); gr.weight[q] != 0 {
					naive[f] = append(naive[f], math.Abs(t-y))
				}
			}
		}
	}
	return naive
}

// mostInfluential lists the ten blocks with the largest parameter change
// norms[b], with their labels and mean prediction shifts.
func mostInfluential(scheme *blocks.Scheme, norms, shifts []float64) []InfluenceEntry {
	idx := make([]int, len(norms))
	for i := range idx {
		idx[i] = i
	}
	num.SortByDesc(idx, norms)
	var out []InfluenceEntry
	for _, k := range idx[:min(10, len(idx))] {
		out = append(out, InfluenceEntry{Block: scheme.Blocks[k].Label, Norm: norms[k], PredShift: shifts[k]})
	}
	return out
}

// perturbed gives the leave-one-block-out models' predictions at the
// evaluation points (the test points, then the calibration points): the
// input of the limits phase. The limits phase reads one point at a time,
// so an implementation need not hold blocks × points at once: predMatrix
// holds forward passes at theta_hat + delta_b; a linearised one can
// compute f(x_p; theta_hat) + J_p delta_b in a low-dimensional space on
// demand.
type perturbed interface {
	// blocks is the number of leave-one-block-out models.
	blocks() int
	// point writes into dst[b] the prediction at point p of block b's
	// model, for every block b (NaN for a block not estimated), and
	// returns dst; len(dst) is blocks().
	point(p int, dst []float64) []float64
}

// predMatrix is perturbed from forward passes: m[b][p] is the prediction
// at point p of block b's model; a nil row is a block not estimated.
type predMatrix [][]float64

func (m predMatrix) blocks() int { return len(m) }

func (m predMatrix) point(p int, dst []float64) []float64 {
	for b, row := range m {
		if row == nil {
			dst[b] = math.NaN()
		} else {
			dst[b] = row[p]
		}
	}
	return dst
}

// perturbedPredictions evaluates the evaluation points ev (test, then
// calibration) with theta_hat + deltas[k] for every k and then with
// thetas[k]: out[k][p] is the prediction of test point p, and
// out[k][len(ev.test)+c] that of calibration point c.
func perturbedPredictions(ctx context.Context, p *problem, ev *evaluation, phase string, deltas, thetas [][]float64) (predMatrix, error) {
	out := make(predMatrix, len(deltas)+len(thetas))
	ws := newStates(p.workers)
	bufs := make([][]float64, p.workers)
	for w := range bufs {
		bufs[w] = make([]float64, len(p.theta))
	}
	// The point sets, and the positions of their points in each group's
	// output.
	sets := []struct {
		groups []*group
		points []point
		off    int
		// byGroup are the points of each group: gathers from the
		// group's output to the prediction vector.
		byGroup []gather
	}{{groups: p.evalGroups, points: ev.test}, {groups: p.calGroups, points: ev.cal, off: len(ev.test)}}
	for s := range sets {
		set := &sets[s]
		set.byGroup = make([]gather, len(set.groups))
		for i, pt := range set.points {
			g := &set.byGroup[pt.group]
			g.dst, g.src = append(g.dst, set.off+i), append(g.src, pt.pos)
		}
		for gi := range set.byGroup {
			set.byGroup[gi].settle()
		}
	}
	var mu sync.Mutex
	done := 0
	total := len(out)
	err := par.For(ctx, total, p.workers, func(w, k int) error {
		th := bufs[w]
		if k < len(deltas) {
			for j := range th {
				th[j] = p.theta[j] + deltas[k][j]
			}
		} else {
			copy(th, thetas[k-len(deltas)])
		}
		pred := make([]float64, len(ev.test)+len(ev.cal))
		for _, set := range sets {
			for gi, gr := range set.groups {
				if len(set.byGroup[gi].dst) == 0 {
					continue
				}
				outs, err := ws[w].get(gr.prog).Forward(th, gr.in)
				if err != nil {
					return err
				}
				p.collect(&set.byGroup[gi], gr, pred, outs[0].F)
			}
		}
		out[k] = pred
		mu.Lock()
		done++
		p.opt.progress(phase, done, total)
		mu.Unlock()
		return nil
	})
	return out, err
}

// gather copies src[i] of a group's output to dst[i] of a prediction
// vector; run marks a gather that is one contiguous range (dst and src
// both consecutive), done with copy.
type gather struct {
	dst, src []int
	run      bool
}

// settle sets run.
func (g *gather) settle() {
	g.run = len(g.dst) > 0
	for i := 1; i < len(g.dst) && g.run; i++ {
		g.run = g.dst[i] == g.dst[0]+i && g.src[i] == g.src[0]+i
	}
}

// do gathers out into pred.
func (g *gather) do(pred, out []float64) {
	if g.run {
		copy(pred[g.dst[0]:g.dst[0]+len(g.dst)], out[g.src[0]:])
		return
	}
	for i, d := range g.dst {
		pred[d] = out[g.src[i]]
	}
}

// collect is g.do, or for a K-class model problem.at at g's positions.
func (p *problem) collect(g *gather, gr *group, pred, out []float64) {
	if p.multi == nil {
		g.do(pred, out)
		return
	}
	for i, d := range g.dst {
		_, pred[d] = p.at(gr, out, g.src[i])
	}
}

// stepsRep is the influence representation of the dense solvers: every
// block's step delta_b in parameter space (inf.delta) and, for the Newton
// estimator, its own linearised residuals (inf.own). Its residuals and
// perturbed predictions come from forward passes at theta_hat + delta_b.
type stepsRep struct {
	inf *influence
	loo *looResiduals
}

func (r *stepsRep) residuals(ctx context.Context, p *problem, mark func(string)) (*looResiduals, error) {
	const phase = "leave-one-block-out residuals"
	mark(phase)
	loo, err := blockResiduals(ctx, p, r.inf.delta, r.inf.own, phase)
	r.loo = loo
	return loo, err
}

func (r *stepsRep) limits(ctx context.Context, p *problem, ev *evaluation, cal bool) (limits, []interval.CalibrationPoint, error) {
	// Only the points asked for are evaluated: the calibration points'
	// limits belong to the fit, the test points' to every prediction.
	// Chunks of sequences at a time (chunkedLimits): the limits need no
	// blocks × points matrix.
	if !cal {
		return chunkedLimits(ctx, p, p.eval, p.evalGroups, ev.test, r.inf.delta, p.sets(r.loo.entries), p.self, true, "intervals", chunkBytes)
	}
	l, _, err := chunkedLimits(ctx, p, p.cal, p.calGroups, ev.cal, r.inf.delta, p.sets(r.loo.entries), false, false, "intervals", chunkBytes)
	return l, nil, err
}

var _ influenceRep = (*stepsRep)(nil)
