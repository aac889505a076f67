package audit

import (
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestFitCheckRMSE: the column check's RMSE of the data as read and of
// its targets shifted by one row, which reuse the training batches'
// outputs, equal the RMSE of one forward pass per sequence against the
// targets read by hand (row t's target at shift s is the file's row
// t+s-Shift); and the check reads the same figures from the outputs
// given as from passes of its own.
func TestFitCheckRMSE(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	d := randomData(t, "train", g, graph.BatchFirst, 9, 0, 4, 7, 3)
	p := newProblem(t, g, d, Options{Layout: graph.BatchFirst})
	fx, err := p.trainOutputs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkFit(t.Context(), p, nil, fx)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := checkFit(t.Context(), p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// rmse is the reference at shift s.
	rmse := func(s int) float64 {
		var ss float64
		n := 0
		for _, q := range d.Seqs {
			T := q.Len()
			prog, in, err := p.io.Program(1, T, []*blocks.Sequence{q})
			if err != nil {
				t.Fatal(err)
			}
			outs, err := prog.NewState().Forward(p.theta, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range p.io.Forecasts(T) {
				row := f.T + f.H
				if row < q.Context {
					continue
				}
				u := row + s - d.Shift
				if row >= T || u < 0 || u >= T || q.Y[u] == nil {
					continue
				}
				e := q.Y[u][0] - outs[0].F[p.io.Index(1, T, 0, f.T, f.H)]
				ss += e * e
				n++
			}
		}
		return math.Sqrt(ss / float64(n))
	}
	close := func(what string, got, want float64) {
		t.Helper()
		if !(math.Abs(got-want) <= 1e-12*want) {
			t.Errorf("%s: RMSE %.17g, one pass per sequence %.17g", what, got, want)
		}
	}
	close("as read", got.RMSE, rmse(d.Shift))
	shifts := 0
	for _, a := range got.Alternatives {
		if a.Features == nil {
			close("shifted", a.RMSE, rmse(a.Shift))
			shifts++
		}
	}
	if shifts == 0 {
		t.Errorf("no shifted alternative: %+v", got.Alternatives)
	}
	if got.RMSE != fresh.RMSE || len(got.Alternatives) != len(fresh.Alternatives) {
		t.Fatalf("from the training outputs %+v, from passes of its own %+v", got, fresh)
	}
	for i, a := range got.Alternatives {
		if a.RMSE != fresh.Alternatives[i].RMSE {
			t.Errorf("alternative %d: from the training outputs %v, from passes of its own %v", i, a.RMSE, fresh.Alternatives[i].RMSE)
		}
	}
}
