package audit

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// chunkSize is the most sequences per batch for per-sequence gradients:
// enough batches to keep every core busy, each small enough to stay in
// cache.
const chunkSize = 256

// seqGrads computes per-training-sequence gradients: from batched passes
// over chunks of at most chunkSize sequences split by sequence
// (hvp.Objective.PerExampleGradients), or, for a model whose batch entries
// do not separate, from one backward pass per sequence. It keeps its
// objectives (their example analyses and evaluation buffers) and which
// path works across calls; the block-gradient and influence phases share
// one.
type seqGrads struct {
	p        *problem
	chunks   []*group // nil on the one-pass-per-sequence path
	chunkObj *hvp.Objective
	partObj  *hvp.Objective
	// separate: one pass per sequence (the batch entries do not separate,
	// found on the first call, or a test asks for it).
	separate bool
}

// newSeqGrads prepares per-sequence gradients of p's training sequences;
// separate asks for one pass per sequence from the start.
func newSeqGrads(p *problem, separate bool) (*seqGrads, error) {
	s := &seqGrads{p: p, separate: separate}
	if !separate {
		var err error
		if s.chunks, err = p.makeGroups(p.train, chunkSize); err != nil {
			return nil, err
		}
		s.chunkObj = p.objective(s.chunks)
		for c := range s.chunks {
			s.chunkObj.Batches[c].ExampleAxes = p.io.exampleAxes()
		}
	}
	return s, nil
}

// rows returns, for every training sequence, the gradient of its loss
// terms whose target row is in [lo, hi).
func (s *seqGrads) rows(ctx context.Context, lo, hi int) ([][]float64, error) {
	return s.grads(ctx, func(gr *group) []float64 { return s.p.maskRows(gr, lo, hi) }, false)
}

// grads returns, for every training sequence, the gradient of its loss
// terms that mask keeps (mask gives a group's weights), or with outputs
// set the gradient of the kept outputs' weighted sum (hvp.Job.Outputs):
// rows of the output Jacobian when mask keeps one term per sequence.
func (s *seqGrads) grads(ctx context.Context, mask func(gr *group) []float64, outputs bool) ([][]float64, error) {
	p := s.p
	n := p.train.Len()
	out := make([][]float64, n)
	if !s.separate {
		jobs := make([]hvp.Job, len(s.chunks))
		res := make([][][]float64, len(s.chunks))
		for c, gr := range s.chunks {
			jobs[c] = hvp.Job{Batch: c, Weight: mask(gr), Outputs: outputs}
			res[c] = make([][]float64, len(gr.seqs))
		}
		err := s.chunkObj.PerExampleGradients(ctx, p.theta, jobs, res, nil)
		if err == nil {
			for c, gr := range s.chunks {
				for b, i := range gr.seqs {
					out[i] = res[c][b]
				}
			}
			return out, nil
		}
		if !errors.Is(err, graph.ErrNotSeparable) {
			return nil, err
		}
		s.separate = true
	}
	if s.partObj == nil {
		s.partObj = p.objective(p.parts)
	}
	jobs := make([]hvp.Job, len(p.parts))
	idx := make([]int, len(p.parts))
	for pi, gr := range p.parts {
		jobs[pi] = hvp.Job{Batch: pi, Weight: mask(gr), Outputs: outputs}
		idx[pi] = gr.seqs[0]
	}
	res := make([][]float64, len(jobs))
	if err := s.partObj.Gradients(ctx, p.theta, jobs, res, nil); err != nil {
		return nil, err
	}
	for pi, i := range idx {
		out[i] = res[pi]
	}
	return out, nil
}

// blockGradients is the block-gradient phase: grad L_b for every block of
// p's scheme (DESIGN section 2), from per-sequence gradients, and for
// interval and nested schemes from per (sequence, interval) cell
// gradients combined by addition.
func blockGradients(ctx context.Context, p *problem, sg *seqGrads) ([][]float64, error) {
	bl := p.scheme.Blocks
	out := make([][]float64, len(bl))
	if p.scheme.Kind == blocks.Sequences {
		seq, err := sg.rows(ctx, 0, math.MaxInt)
		if err != nil {
			return nil, err
		}
		for k, b := range bl {
			out[k] = seq[b.Seq]
		}
		return out, nil
	}
	// cells[j][i]: the gradient of sequence i's terms in interval j.
	P := len(p.theta)
	n := p.train.Len()
	var cells [][][]float64
	for _, b := range bl {
		if b.Interval < 0 {
			continue
		}
		for len(cells) <= b.Interval {
			cells = append(cells, nil)
		}
		if cells[b.Interval] == nil {
			c, err := sg.rows(ctx, b.Lo, b.Hi)
			if err != nil {
				return nil, err
			}
			cells[b.Interval] = c
		}
	}
	seqGrad := func(i int) []float64 {
		s := make([]float64, P)
		for _, c := range cells {
			if c != nil {
				addTo(s, c[i], 1)
			}
		}
		return s
	}
	intGrad := make([][]float64, len(cells))
	for j, c := range cells {
		intGrad[j] = make([]float64, P)
		for i := 0; i < n && c != nil; i++ {
			addTo(intGrad[j], c[i], 1)
		}
	}
	for k, b := range bl {
		switch b.Kind {
		case blocks.Intervals:
			out[k] = slices.Clone(intGrad[b.Interval])
		case blocks.Nested:
			g := seqGrad(b.Seq)
			addTo(g, intGrad[b.Interval], 1)
			addTo(g, cells[b.Interval][b.Seq], -1)
			out[k] = g
		default:
			out[k] = seqGrad(b.Seq)
		}
	}
	return out, nil
}

func addTo(dst, src []float64, a float64) {
	for i, v := range src {
		dst[i] += a * v
	}
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
