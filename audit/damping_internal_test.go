package audit

import (
	"context"
	"testing"

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
		fresh, err := dampingSensitivity(ctx, p, ev, nil, ds.Rho, ds.Width)
		if err != nil {
			t.Fatal(err)
		}
		if fresh.Low != ds.Low || fresh.High != ds.High {
			t.Errorf("%s: re-damped %+v %+v, afresh %+v %+v", name, ds.Low, ds.High, fresh.Low, fresh.High)
		}
	}
}
