package audit

import (
	"context"
	"slices"
	"sync"

	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/asm/f64"
	"github.com/rnnaudit/rnnaudit/internal/par"
)

// chunkBytes bounds the perturbed predictions the chunked intervals phase
// holds at once (blocks × the points of one chunk of sequences, in
// float64s). The whole blocks × points matrix is 80 MB at the paper's
// scale (1000 blocks, 10,000 test points); writing that much fresh memory
// cost about a third of a whole-file predict here (first-touch page
// faults), where a few MB reused for every chunk stay in cache.
const chunkBytes = 4 << 20

// seqChunk is a batch of sequences of one evaluation group run as one
// program in the chunked intervals phase, with the points of pts it
// holds.
type seqChunk struct {
	gr  *group
	idx []int // indices into pts
	g   gather
}

// chunkedLimits is jackknifeLimits (self, every block) of the points pts
// of the dataset d, batched in groups, and with curve their calibration
// curve, without holding every block's predictions at every point: the
// groups' sequences are re-batched into chunks of a few dozen (a multiple
// of four, so that every row of a product takes the same kernel path as
// in the whole group, and the predictions are bit for bit those of
// perturbedPredictions); for each chunk every block's model theta_hat +
// deltas[b] runs once and the chunk's limits are taken before the next.
// budget bounds the bytes of predictions held at once (chunkBytes).
func chunkedLimits(ctx context.Context, p *problem, d *blocks.Dataset, groups []*group, pts []point, deltas [][]float64, entries *residualSets, self, curve bool, phase string, budget int) (limits, []interval.CalibrationPoint, error) {
	n := len(pts)
	l := limits{lo: make([]float64, n), up: make([]float64, n), m: make([]int, n), sd: make([]float64, n)}
	if p.opt.Classify != nil || p.multi != nil {
		l.cls = make([]classify.Forecast, n)
	}
	chunks, maxPts, err := p.seqChunks(d, groups, pts, len(deltas), budget)
	if err != nil {
		return l, nil, err
	}
	nb := len(deltas)
	buf := make([]float64, nb*maxPts)
	preds, col := make(predMatrix, nb), make([]float64, nb)
	ws := newStates(p.workers)
	sel := newSelector(pts, entries, self, p.workers)
	ths := make([][]float64, p.workers)
	spreads := make([]interval.Spread, p.workers)
	for w := range ths {
		ths[w] = make([]float64, len(p.theta))
	}
	var (
		mu     sync.Mutex
		done   int
		counts [][]int
		local  []point
	)
	total := nb * len(chunks)
	for _, c := range chunks {
		np := len(c.idx)
		for b := range preds {
			preds[b] = buf[b*np : (b+1)*np]
		}
		for w := range spreads {
			spreads[w].Reset(np)
		}
		kl := p.multi.Logits(nb, c.g.src) // a K-class model's logits, or nil
		err := par.For(ctx, nb, p.workers, func(w, b int) error {
			th := ths[w]
			copy(th, p.theta)
			f64.AddTo(th, deltas[b])
			outs, err := ws[w].get(c.gr.prog).Forward(th, c.gr.in)
			if err != nil {
				return err
			}
			p.collect(&c.g, c.gr, preds[b], outs[0].F)
			kl.Add(b, outs[0].F)
			spreads[w].Add(preds[b])
			if p.opt.Progress != nil {
				mu.Lock()
				done++
				p.opt.progress(phase, done, total)
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return l, nil, err
		}
		if kl != nil {
			outs, err := ws[0].get(c.gr.prog).Forward(p.theta, c.gr.in)
			if err != nil {
				return l, nil, err
			}
			kl.Add(-1, outs[0].F)
		}
		sel.Merge(spreads)
		local = local[:0]
		for _, i := range c.idx {
			local = append(local, pts[i])
		}
		cl, cc := scanCounts(ctx, p.workers, p.opt.Alpha, local, 0, preds, entries, self, nil, curve, sel)
		for j, i := range c.idx {
			l.lo[i], l.up[i], l.m[i] = cl.lo[j], cl.up[j], cl.m[j]
			l.sd[i] = interval.PredictionSD(preds.point(j, col))
			if o := p.opt.Classify; l.cls != nil {
				es, skip := entries.at(pts[i], self)
				if kl != nil {
					l.cls[i] = kl.Point(p.opt.Alpha, j, int(c.gr.label[c.g.src[j]]), es, skip)
					continue
				}
				l.cls[i] = classify.Point(o, p.opt.Alpha, pts[i].pred, pts[i].y, pts[i].has, preds.point(j, make([]float64, nb)), es, skip)
			}
		}
		counts = append(counts, cc...)
	}
	if err := ctx.Err(); err != nil {
		return l, nil, err
	}
	if !curve {
		return l, nil, nil
	}
	return l, curveOf(counts, labelledCount(pts)), nil
}

// seqChunks re-batches the groups of d holding the points pts into chunks
// whose blocks × points predictions fit in budget bytes (at least four
// sequences each), and returns them with the most points of one chunk.
// A group small enough is its own chunk; the others' chunks are new
// programs (shared between chunks of one size by modelio.IO.Program's cache)
// of sequences gr.seqs[lo:hi], lo a multiple of the chunk size, itself a
// multiple of four.
func (p *problem) seqChunks(d *blocks.Dataset, groups []*group, pts []point, blocks, budget int) ([]*seqChunk, int, error) {
	// The points of each group, in pts order (slices sized first: at the
	// paper's scale the appends' growth was most of this function's
	// allocation).
	byGroup := make([][]int, len(groups))
	count := make([]int, max(len(groups), 1))
	for _, pt := range pts {
		count[pt.group]++
	}
	for gi := range byGroup {
		byGroup[gi] = make([]int, 0, count[gi])
	}
	for i, pt := range pts {
		byGroup[pt.group] = append(byGroup[pt.group], i)
	}
	var out []*seqChunk
	maxPts := 0
	add := func(c *seqChunk) {
		c.g.dst = make([]int, len(c.idx))
		for j := range c.g.dst {
			c.g.dst[j] = j
		}
		c.g.settle()
		out = append(out, c)
		maxPts = max(maxPts, len(c.idx))
	}
	for gi, gr := range groups {
		idx := byGroup[gi]
		if len(idx) == 0 {
			continue
		}
		B := len(gr.seqs)
		perSeq := (len(idx) + B - 1) / B
		size := max(4, budget/(8*max(1, blocks)*max(1, perSeq))&^3)
		if size >= B {
			c := &seqChunk{gr: gr, idx: idx, g: gather{src: make([]int, 0, len(idx))}}
			for _, i := range idx {
				c.g.src = append(c.g.src, pts[i].pos)
			}
			add(c)
			continue
		}
		// Position of each sequence of the group in its batch.
		at := make(map[int]int, B)
		for b, s := range gr.seqs {
			at[s] = b
		}
		sub := make([]*seqChunk, (B+size-1)/size)
		for k := range sub {
			lo, hi := k*size, min((k+1)*size, B)
			c, err := p.newGroup(d, gr.T, gr.seqs[lo:hi])
			if err != nil {
				return nil, 0, err
			}
			sub[k] = &seqChunk{gr: c}
		}
		count = slices.Grow(count[:0], len(sub))[:len(sub)]
		clear(count)
		for _, i := range idx {
			count[at[pts[i].seq]/size]++
		}
		for k, c := range sub {
			c.idx, c.g.src = make([]int, 0, count[k]), make([]int, 0, count[k])
		}
		for _, i := range idx {
			pt := pts[i]
			b := at[pt.seq]
			c := sub[b/size]
			c.idx = append(c.idx, i)
			c.g.src = append(c.g.src, p.io.Index(len(c.gr.seqs), gr.T, b%size, pt.f.T, pt.f.H))
		}
		for _, c := range sub {
			if len(c.idx) > 0 {
				add(c)
			}
		}
	}
	return out, maxPts, nil
}

// labelledCount is the number of points of pts with a known target.
func labelledCount(pts []point) int {
	n := 0
	for _, pt := range pts {
		if pt.has {
			n++
		}
	}
	return n
}
