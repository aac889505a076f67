package audit

import (
	"context"
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/sensitivity"
	"github.com/rnnaudit/rnnaudit/blocks"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// TestDampingSensitivityRedamped: the damping sensitivity, which
// re-damps the audit's factorisation, gives the figures of whole audits
// run at rho / 10 and rho x 10 (their pooled mean width, coverage and
// unbounded intervals), and the same figures as re-running the influence
// phase afresh; for the exact solver with both estimators and both
// curvatures, and the dual one.
func TestDampingSensitivityRedamped(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 14, 0, 4, 6, 11)
	test := randomData(t, "test", g, graph.BatchFirst, 5, 0, 4, 7, 12)
	ctx := context.Background()
	for _, o := range []Options{
		{Solver: Exact},
		{Solver: Exact, Estimator: Infinitesimal, Curvature: hvp.Hessian},
		{Solver: Dual},
	} {
		o.Layout, o.DampingSensitivity = graph.BatchFirst, true
		res, err := Run(ctx, g, train, test, &o)
		if err != nil {
			t.Fatal(err)
		}
		ds := res.Diag.DampingSensitivity
		name := res.Setting.Solver + " " + res.Setting.Estimator + " " + res.Setting.Curvature
		if ds == nil || !ds.Computed {
			t.Fatalf("%s: sensitivity not computed: %+v", name, ds)
		}
		for _, want := range []DampedFigures{ds.Low, ds.High} {
			q := o
			q.Damping, q.DampingSensitivity = want.Rho, false
			at, err := Run(ctx, g, train, test, &q)
			if err != nil {
				t.Fatal(err)
			}
			s := at.Summary
			if got := (DampedFigures{Rho: want.Rho, MeanLength: s.MeanLength, Coverage: s.Coverage, Infinite: s.Infinite}); got != want {
				t.Errorf("%s: the sensitivity at rho %g: %+v; a whole audit there: %+v", name, want.Rho, want, got)
			}
		}
		// Afresh (no re-damping) through the same function.
		vo, vg, err := validate(g, train, test, &o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := prepare(vo, vg, train, test)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := evaluate(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := dampingSensitivity(ctx, p, ev, nil, res, sensitivitySample)
		if err != nil {
			t.Fatal(err)
		}
		if fresh.Low != ds.Low || fresh.High != ds.High {
			t.Errorf("%s: re-damped %+v %+v, afresh %+v %+v", name, ds.Low, ds.High, fresh.Low, fresh.High)
		}
		// On a sample of 2 of the 5 test sequences: the figures of whole
		// audits of those two sequences alone, at rho and rho / 10 and x 10.
		sub, err := dampingSensitivity(ctx, p, ev, nil, res, 2)
		if err != nil {
			t.Fatal(err)
		}
		keep := sensitivity.Sample(len(test.Seqs), 2, o.Seed)
		part := *test
		part.Seqs = []*blocks.Sequence{test.Seqs[keep[0]], test.Seqs[keep[1]]}
		if sub.Sampled != 2 || sub.Sequences != 5 || sub.Width != ds.Width {
			t.Errorf("%s: sampled %d of %d, width %g; want 2 of 5, %g", name, sub.Sampled, sub.Sequences, sub.Width, ds.Width)
		}
		for _, c := range []struct {
			rho  float64
			want float64
			f    *DampedFigures
		}{{ds.Rho, sub.SampleWidth, nil}, {sub.Low.Rho, sub.Low.MeanLength, &sub.Low}, {sub.High.Rho, sub.High.MeanLength, &sub.High}} {
			q := o
			q.Damping, q.DampingSensitivity = c.rho, false
			at, err := Run(ctx, g, train, &part, &q)
			if err != nil {
				t.Fatal(err)
			}
			if s := at.Summary; math.Abs(s.MeanLength-c.want) > 1e-9*s.MeanLength {
				t.Errorf("%s: sampled mean width at rho %g: %g; a whole audit of the sample: %g", name, c.rho, c.want, s.MeanLength)
			} else if c.f != nil && (c.f.Coverage != s.Coverage || c.f.Infinite != s.Infinite || !(c.f.ShareSE > 0)) {
				t.Errorf("%s: sampled figures at rho %g: %+v; a whole audit of the sample: coverage %g, %d unbounded", name, c.rho, *c.f, s.Coverage, s.Infinite)
			}
		}
	}
}
