package audit

import (
	"reflect"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// TestTermStore checks the compact store's terms against ownTerms, which
// lists them from the same forward passes, on sequences of several
// lengths (700 sequences: batches of several lengths and sizes): every
// field equal.
func TestTermStore(t *testing.T) {
	g := fixtureModel(t, "gru_1l_bf")
	train := randomData(t, "train", g, graph.BatchFirst, 700, 0, 3, 9, 5)
	o, err := (&Options{Layout: graph.BatchFirst, Solver: LowRank}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p, err := prepare(o, g, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.ownTerms()
	if err != nil {
		t.Fatal(err)
	}
	s := newTermStore(p, mustTrainOutputs(t, p))
	n := 0
	for i := range want {
		if got := s.of(i); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("sequence %d: the store gives %+v, ownTerms %+v", i, got, want[i])
		}
		n += len(want[i])
	}
	if !reflect.DeepEqual(s.all(), want) {
		t.Fatal("all: the store's terms differ from ownTerms'")
	}
	if len(p.groups) < 2 || n == 0 {
		t.Fatalf("%d batches and %d terms: the test needs several batches", len(p.groups), n)
	}
	if p.parts != nil {
		t.Errorf("the LowRank problem keeps %d per-sequence batches, want none", len(p.parts))
	}
}
