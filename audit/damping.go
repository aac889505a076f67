package audit

import (
	"context"
	"fmt"

	"github.com/rnnaudit/rnnaudit/audit/sensitivity"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// dampingFor is the relative damping rho of an audit: Options.Damping
// when given, else the default for the curvature and the model's
// stationarity ratio (hvp.DefaultDampingFor: one continuous rule, which
// the ridge the user passes does not move).
func dampingFor(o *Options, stationarity float64) float64 {
	if o.Damping != 0 {
		return o.Damping
	}
	return hvp.DefaultDampingFor(o.Curvature, stationarity)
}

// DampingSensitivity is how much the intervals move when the damping is
// multiplied and divided by SensitivityFactor (sensitivity.Damping),
// re-run on at most sensitivitySample evaluated sequences.
type DampingSensitivity = sensitivity.Damping

// DampedFigures are the pooled figures of one re-run at another damping.
type DampedFigures = sensitivity.Figures

// sensitivityMaxDim bounds the size of the factorisation (P for the exact
// solver, the loss terms for the dual one) for which the sensitivity is
// computed: two more factorisations of that size, a few seconds at 2000.
const sensitivityMaxDim = 2000

// sensitivitySample is the most evaluated sequences the damping
// sensitivity re-runs: with more, it runs on that many drawn at random
// (with Options.Seed) and states the standard error of its width share.
// Its cost is two sets of perturbed forward passes (every block on every
// sequence re-run), so at the paper's scale (1000 test sequences) the
// sample makes it a fifth of what re-running them all cost, while the
// paired share's standard error stays a small fraction of DampingShare
// (sensitivity.ShareSE).
const sensitivitySample = 200

// dampingSensitivity re-runs the influence, residual and interval phases
// with the damping rho (the audit's) multiplied and divided by
// SensitivityFactor, over the labelled points within the training steps
// (as the pooled summary counts them) of the evaluated sequences, or of
// sensitivitySample of them drawn at random when there are more. The
// influence phase re-damps the audit's own (inf.redamp: its block
// gradients and factorisation, so only the solves and the Newton
// correction are redone) when it can, and runs afresh otherwise; the
// figures are the same either way.
// sample is the most sequences re-run (sensitivitySample).
func dampingSensitivity(ctx context.Context, p *problem, ev *evaluation, inf *influence, res *Result, sample int) (*DampingSensitivity, error) {
	rho := res.Setting.Damping
	ds := &DampingSensitivity{Rho: rho, Width: res.Summary.MeanLength}
	solver, _ := p.solverName()
	switch {
	case solver == Exact && p.g.NumParams() <= sensitivityMaxDim, solver == Dual && p.terms() <= sensitivityMaxDim:
	case solver == Exact || solver == Dual:
		ds.Reason = fmt.Sprintf("not computed: the %s factorisation is larger than %d, and two more would take long", solver, sensitivityMaxDim)
		return ds, nil
	default:
		ds.Reason = fmt.Sprintf("not computed on the %s path", solver)
		return ds, nil
	}
	if !(rho > 0) {
		ds.Reason = "not computed: no damping"
		return ds, nil
	}
	fx, err := p.trainOutputs(ctx)
	if err != nil {
		return nil, err
	}
	naive := inSampleResiduals(p, fx)
	s, err := solverFor(solver)
	if err != nil {
		return nil, err
	}
	sub, err := sampleEvaluation(p, ev, res, naive, sample)
	if err != nil {
		return nil, err
	}
	if sub != nil {
		ds.Sampled, ds.Sequences, ds.SampleWidth = sub.n, len(p.eval.Seqs), sub.width
		ev = &evaluation{test: sub.pts, cal: ev.cal}
	}
	quiet := func(string) {}
	for i, r := range []float64{rho / SensitivityFactor, rho * SensitivityFactor} {
		q := *p
		q.opt.Damping = r
		q.opt.Progress = nil
		if sub != nil {
			q.evalGroups = sub.groups
		}
		var re *influence
		if inf != nil && inf.redamp != nil {
			re, err = inf.redamp(ctx, &q, r)
		} else {
			re, err = s.influence(ctx, &q, ev, quiet)
		}
		if err != nil {
			return nil, err
		}
		if _, err := re.rep.residuals(ctx, &q, quiet); err != nil {
			return nil, err
		}
		l, _, err := re.rep.limits(ctx, &q, ev, false)
		if err != nil {
			return nil, err
		}
		naiveLimits(q.opt.Alpha, naive, q.opt.poolKey(), ev.test, &l)
		pooled, _ := withinTraining(ev.test, l)
		sum := summarize(q.level(), q.io.Horizons(), pooled, l)
		if sum == nil {
			ds.Reason = "not computed: no labelled values"
			return ds, nil
		}
		f := DampedFigures{Rho: r, MeanLength: sum.MeanLength, Coverage: sum.Coverage, Infinite: sum.Infinite}
		if sub != nil {
			f.ShareSE = sub.shareSE(l, len(p.eval.Seqs))
		}
		if i == 0 {
			ds.Low = f
		} else {
			ds.High = f
		}
	}
	ds.Computed = true
	return ds, nil
}

// sensitivityEval is the random subsample of the evaluated sequences the
// damping sensitivity re-runs: n sequences batched in groups (one per
// evaluation group holding some), their points (renumbered into those
// groups), the audit's own limits there (own) with their pooled mean
// width, and each point's sequence in the sample (cluster).
type sensitivityEval struct {
	n       int
	groups  []*group
	pts     []point
	own     limits
	pooled  []point
	width   float64
	cluster []int
}

// sampleEvaluation draws sample of the evaluated sequences (nil when
// there are no more than that: every one is re-run) and reads
// the audit's own limits of their points from res (whose Steps follow
// ev.test's order, sequences).
func sampleEvaluation(p *problem, ev *evaluation, res *Result, naive map[forecast][]float64, sample int) (*sensitivityEval, error) {
	n := len(p.eval.Seqs)
	if n <= sample {
		return nil, nil
	}
	in := make([]int, n)
	for i := range in {
		in[i] = -1
	}
	keep := sensitivity.Sample(n, sample, p.opt.Seed)
	for k, s := range keep {
		in[s] = k
	}
	sub := &sensitivityEval{n: len(keep)}
	place := make([]int, n)
	regroup := make([]int, len(p.evalGroups))
	for gi, gr := range p.evalGroups {
		regroup[gi] = -1
		var seqs []int
		for _, s := range gr.seqs {
			if in[s] >= 0 {
				place[s] = len(seqs)
				seqs = append(seqs, s)
			}
		}
		if len(seqs) == 0 {
			continue
		}
		g, err := p.newGroup(p.eval, gr.T, seqs)
		if err != nil {
			return nil, err
		}
		regroup[gi] = len(sub.groups)
		sub.groups = append(sub.groups, g)
	}
	next := make([]int, n)
	for _, pt := range ev.test {
		k := next[pt.seq]
		next[pt.seq]++
		if in[pt.seq] < 0 {
			continue
		}
		st := res.Sequences[pt.seq].Steps[k]
		g := sub.groups[regroup[pt.group]]
		pt.group, pt.pos = regroup[pt.group], p.io.Index(len(g.seqs), g.T, place[pt.seq], pt.f.T, pt.f.H)
		sub.pts = append(sub.pts, pt)
		sub.own.lo, sub.own.up, sub.own.m = append(sub.own.lo, st.Lower), append(sub.own.up, st.Upper), append(sub.own.m, st.M)
		sub.cluster = append(sub.cluster, in[pt.seq])
	}
	naiveLimits(p.opt.Alpha, naive, p.opt.poolKey(), sub.pts, &sub.own)
	sub.pooled, _ = withinTraining(sub.pts, sub.own)
	if sum := summarize(p.level(), p.io.Horizons(), sub.pooled, sub.own); sum != nil {
		sub.width = sum.MeanLength
	}
	return sub, nil
}

// shareSE is the standard error of the relative move of the mean width
// with the re-run's limits l (sensitivity.PairedSE), the sample's
// sequences as clusters out of n.
func (s *sensitivityEval) shareSE(l limits, n int) float64 {
	has := make([]bool, len(s.pooled))
	for i, pt := range s.pooled {
		has[i] = pt.has
	}
	return sensitivity.PairedSE(s.cluster, has, s.own.lo, s.own.up, l.lo, l.up, s.n, n)
}
