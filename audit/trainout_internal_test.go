package audit

import (
	"math"
	"slices"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// mustTrainOutputs is p.trainOutputs for a test.
func mustTrainOutputs(t *testing.T, p *problem) trainOutputs {
	t.Helper()
	fx, err := p.trainOutputs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// TestTrainOutputsChecks checks the shared outputs on the training
// batches, and the in-sample residuals and the scheme advice's lag-1
// autocorrelation made from them, against an independent reference: the
// model run on each training sequence alone (a batch of one, a State of
// its own), its residuals |y - f| listed and its first horizon's series
// correlated here. 700 sequences of 3 to 9 rows make batches of several
// lengths and sizes; the outputs must not depend on the number of
// workers, bit for bit.
func TestTrainOutputsChecks(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 700, 0, 3, 9, 5)
	p := newProblem(t, g, train, Options{Layout: graph.BatchFirst})
	if len(p.groups) < 4 {
		t.Fatalf("%d batches: the test needs several", len(p.groups))
	}
	fx := mustTrainOutputs(t, p)
	one := *p
	one.workers = 1
	if fx1 := mustTrainOutputs(t, &one); !slices.EqualFunc(fx, fx1, slices.Equal) {
		t.Error("the outputs on 2 workers differ from those on 1")
	}

	// The reference: every sequence alone, in the batches' order.
	want := map[forecast][]float64{}
	var series [][]float64
	for _, gr := range p.groups {
		for _, i := range gr.seqs {
			alone, err := p.newGroup(p.train, gr.T, []int{i})
			if err != nil {
				t.Fatal(err)
			}
			outs, err := alone.prog.NewState().Forward(p.theta, alone.in)
			if err != nil {
				t.Fatal(err)
			}
			var r []float64
			for _, f := range p.io.Forecasts(gr.T) {
				q := p.io.Index(1, gr.T, 0, f.T, f.H)
				y := p.train.Seqs[i].Y[f.T+f.H][0]
				want[f] = append(want[f], math.Abs(y-outs[0].F[q]))
				r = append(r, y-outs[0].F[q])
			}
			series = append(series, r)
		}
	}
	got := inSampleResiduals(p, fx)
	if len(got) != len(want) {
		t.Fatalf("residuals at %d forecasts, want %d", len(got), len(want))
	}
	n := 0
	for f, w := range want {
		gf := got[f]
		if len(gf) != len(w) {
			t.Fatalf("forecast %+v: %d residuals, want %d", f, len(gf), len(w))
		}
		for j := range w {
			if d := math.Abs(gf[j] - w[j]); d > 1e-12*(1+math.Abs(w[j])) {
				t.Fatalf("forecast %+v, residual %d: %v from the shared outputs, %v alone", f, j, gf[j], w[j])
			}
			n++
		}
	}
	a, err := adviseScheme(t.Context(), p, fx)
	if err != nil {
		t.Fatal(err)
	}
	rho, pairs := num.Lag1(slices.Values(series))
	if a.Pairs != pairs || math.Abs(a.Lag1-rho) > 1e-12 {
		t.Errorf("lag-1 autocorrelation %v over %d pairs, want %v over %d", a.Lag1, a.Pairs, rho, pairs)
	}
	t.Logf("%d residuals in %d batches; lag-1 %.4f over %d pairs", n, len(p.groups), a.Lag1, a.Pairs)
}
