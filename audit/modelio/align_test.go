package modelio

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestAlignLast checks the two alignments of a many-to-one output with the
// decoder of the zoo whose 3 values are the last 3 rows it reads
// (out[:, -3:]): by default it reads the first T-2 of T rows; with
// AlignLast all T. The forecasts are of the same rows either way (row
// T-3+h for value h), and the model's value h at row T-3+h is its output
// on all T rows, computed here without the IO.
func TestAlignLast(t *testing.T) {
	g, _, err := onnx.LoadOutput(filepath.Join(zooInputs, "decoder_last3_op14.onnx"), "")
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(filepath.Join(zooInputs, "train_static.csv"), &blocks.Options{Features: []string{"x1", "x2"}})
	if err != nil {
		t.Fatal(err)
	}
	seqs := train.Seqs[:2]
	const T = 12
	for _, tc := range []struct {
		align string
		rows  int
	}{{"", T - 2}, {AlignAfter, T - 2}, {AlignLast, T}} {
		m, err := New(g, Config{Layout: graph.BatchFirst, Horizons: 3, Align: tc.align}, train.Features)
		if err != nil {
			t.Fatal(err)
		}
		p, in, err := m.Program(2, T, seqs)
		if err != nil {
			t.Fatal(err)
		}
		if got := in[0].Shape[1]; got != tc.rows {
			t.Errorf("align %q: the model reads %d rows, want %d", tc.align, got, tc.rows)
		}
		if fs := m.Forecasts(T); !slices.Equal(fs, []Forecast{{9, 0}, {9, 1}, {9, 2}}) {
			t.Errorf("align %q: forecasts %v", tc.align, fs)
		}
		if tc.align != AlignLast {
			continue
		}
		out, err := p.NewState().Forward(g.Theta(), in)
		if err != nil {
			t.Fatal(err)
		}
		// The model on each sequence's whole window, built by hand.
		x := graph.NewFloat([]int{2, T, 2}, nil)
		for b, s := range seqs {
			for r := 0; r < T; r++ {
				copy(x.F[(b*T+r)*2:], s.X[r])
			}
		}
		want, err := g.Run(nil, []*graph.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		for b := range seqs {
			for h := 0; h < 3; h++ {
				if got, w := out[0].F[m.Index(2, T, b, 9, h)], want[0].F[b*3+h]; got != w {
					t.Errorf("sequence %d value %d: %v, the model on the whole window %v", b, h, got, w)
				}
			}
		}
	}
	if _, err := New(g, Config{Layout: graph.BatchFirst, Align: "end"}, train.Features); err == nil || !strings.Contains(err.Error(), `alignment "end": choose "after"`) {
		t.Errorf("an unknown alignment: %v", err)
	}
	m, err := New(g, Config{Layout: graph.BatchFirst, Align: AlignLast}, train.Features)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Program(2, 2, seqs); err == nil || !strings.Contains(err.Error(), "needs at least 3 rows") {
		t.Errorf("a window shorter than the values: %v", err)
	}
	ps, _, err := onnx.LoadOutput(filepath.Join(zooInputs, "transformer_causal_op14.onnx"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(ps, Config{Layout: graph.BatchFirst, Align: AlignLast}, train.Features); err == nil || !strings.Contains(err.Error(), "applies only to a many-to-one output") {
		t.Errorf("--align last on a per-step output: %v", err)
	}
}
