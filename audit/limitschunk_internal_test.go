package audit

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestChunkedLimitsMatchMatrix: the chunked intervals phase gives every
// test point and calibration point the limits, and the test set the
// calibration curve, of the whole blocks × points matrix of forward
// passes (perturbedPredictions and scanLimits, the path the adaptive
// kinds still take), bit for bit, at budgets that split the groups of
// sequences of each length into chunks of 4 and 8 sequences (the groups
// having sizes that are not multiples of four), and at one that keeps
// every group whole.
func TestChunkedLimitsMatchMatrix(t *testing.T) {
	g := fixtureModel(t, "paper_rnn")
	train := randomData(t, "train.csv", g, graph.BatchFirst, 40, 0, 4, 6, 1)
	test := randomData(t, "test.csv", g, graph.BatchFirst, 31, 0, 4, 6, 2)
	cal := randomData(t, "cal.csv", g, graph.BatchFirst, 17, 0, 4, 6, 3)
	p, ev, r := fitInfinitesimal(t, g, train, test, cal)
	o := p.opt
	entries := p.sets(r.loo.entries)
	preds, err := perturbedPredictions(t.Context(), p, ev, "", r.inf.delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, wantCurve := limitsAndCurve(t.Context(), 2, o.Alpha, ev.test, preds, entries, p.self)
	wantCal := jackknifeLimits(t.Context(), 2, o.Alpha, ev.cal, len(ev.test), preds, entries, false, nil)
	nb := len(r.inf.delta)
	for _, seqs := range []int{4, 8, 1 << 20} {
		budget := 8 * nb * 6 * seqs
		got, curve, err := chunkedLimits(t.Context(), p, p.eval, p.evalGroups, ev.test, r.inf.delta, entries, p.self, true, "", budget)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "test", seqs, want, got)
		for i := range wantCurve {
			if curve[i] != wantCurve[i] {
				t.Errorf("%d sequences a chunk: curve %d: %+v, want %+v", seqs, i, curve[i], wantCurve[i])
			}
		}
		gotCal, _, err := chunkedLimits(t.Context(), p, p.cal, p.calGroups, ev.cal, r.inf.delta, entries, false, false, "", budget)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "calibration", seqs, wantCal, gotCal)
	}
}

// same fails unless the limits l and m are identical point by point.
func same(t *testing.T, set string, seqs int, l, m limits) {
	t.Helper()
	if len(l.lo) != len(m.lo) {
		t.Fatalf("%s, %d sequences a chunk: %d points, want %d", set, seqs, len(m.lo), len(l.lo))
	}
	for i := range l.lo {
		if math.Float64bits(l.lo[i]) != math.Float64bits(m.lo[i]) || math.Float64bits(l.up[i]) != math.Float64bits(m.up[i]) || l.m[i] != m.m[i] {
			t.Fatalf("%s, %d sequences a chunk: point %d: [%v, %v] of %d, want [%v, %v] of %d", set, seqs, i, m.lo[i], m.up[i], m.m[i], l.lo[i], l.up[i], l.m[i])
		}
	}
}

// BenchmarkIntervalsPaper is the dense intervals phase alone at the
// paper's scale (the vanilla RNN with 20 units, 1000 blocks, 1000 test
// sequences of 10 steps, the infinitesimal jackknife): the chunked path at
// several budgets and the whole-matrix path (perturbedPredictions and
// limitsAndCurve, as the adaptive kinds run it).
func BenchmarkIntervalsPaper(b *testing.B) {
	g := fixtureModel(b, "paper_rnn")
	train := randomData(b, "train.csv", g, graph.BatchFirst, 1000, 0, 10, 10, 1)
	test := randomData(b, "test.csv", g, graph.BatchFirst, 1000, 0, 10, 10, 2)
	p, ev, r := fitInfinitesimal(b, g, train, test, nil)
	p.workers = runtime.GOMAXPROCS(0)
	o := p.opt
	entries := p.sets(r.loo.entries)
	for _, budget := range []int{1 << 20, chunkBytes, 16 << 20} {
		b.Run(fmt.Sprintf("chunked-%dMB", budget>>20), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := chunkedLimits(b.Context(), p, p.eval, p.evalGroups, ev.test, r.inf.delta, entries, p.self, true, "", budget); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("matrix", func(b *testing.B) {
		for b.Loop() {
			preds, err := perturbedPredictions(b.Context(), p, ev, "", r.inf.delta, nil)
			if err != nil {
				b.Fatal(err)
			}
			limitsAndCurve(b.Context(), p.workers, o.Alpha, ev.test, preds, entries, p.self)
		}
	})
}

// fitInfinitesimal fits the paper's method (the exact solver, the
// infinitesimal jackknife) on train with two workers, test as the
// evaluated set and cal (nil: none) as the calibration set, and returns
// the problem, its evaluation points and the blocks' steps.
func fitInfinitesimal(tb testing.TB, g *graph.Graph, train, test, cal *blocks.Dataset) (*problem, *evaluation, *stepsRep) {
	tb.Helper()
	o, err := (&Options{Layout: graph.BatchFirst, Solver: Exact, Estimator: Infinitesimal, Calibration: cal}).withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	o.Workers = 2
	p, err := prepare(o, g, train, test)
	if err != nil {
		tb.Fatal(err)
	}
	ev, err := evaluate(tb.Context(), p)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := fit(tb.Context(), p, ev, func(string) {})
	if err != nil {
		tb.Fatal(err)
	}
	return p, ev, f.inf.rep.(*stepsRep)
}
