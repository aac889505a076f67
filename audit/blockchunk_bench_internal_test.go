package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit/table"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/phases"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// blockChunkBench is the block pass of the low-rank path on the scale
// benchmark's 64-unit LSTM (benchmarks/scale/lstm64.onnx, P = 17,217)
// for n training sequences of 10 steps (randomData), with a
// random rank-200 factor (the pass's cost does not depend on the
// factor's values): the per-sequence gradients in chunks of streamBatch,
// then each chunk's map step (mapBlockChunk) under the in-sample rule, as
// lowRankPass.blockPass runs them.
type blockChunkBench struct {
	p     *problem
	spec  *blockSpec
	s     *rowStream
	chs   []*table.BlockChunk
	terms [][][]ownTerm // per chunk, its sequences' terms
}

// benchK is the scale benchmark's rank (table's benchmarks use the same).
const benchK = 200

// cpuTime is the process's user and system CPU time (phases.ProcessCPU): on a
// machine shared with other work the benchmark reports it per sequence
// beside the wall time.
func cpuTime() time.Duration { return time.Duration(phases.ProcessCPU() * 1e9) }

func randVec(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

func newBlockChunkBench(tb testing.TB, n int) *blockChunkBench {
	tb.Helper()
	path := filepath.Join("..", "benchmarks", "scale", "lstm64.onnx")
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("no %s", path)
	}
	g, err := onnx.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	d := randomData(tb, "train", g, graph.BatchFirst, n, 0, 10, 10, 19)
	r := rand.New(rand.NewPCG(19, 5))
	opt := Options{Layout: graph.BatchFirst, Solver: LowRank}
	o, err := opt.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := prepare(o, g, d, nil)
	if err != nil {
		tb.Fatal(err)
	}
	P := len(p.theta)
	red := hvp.Reduced{D: make([]float64, benchK), Inv: 0.5}
	for i := range red.D {
		red.D[i] = 1 / float64(i+1)
	}
	U := randVec(r, benchK*P)
	spec, err := blockSpecOf(newFactorSpec(p, U, red, forecastSlots(p), false, false))
	if err != nil {
		tb.Fatal(err)
	}
	fx, err := p.trainOutputs(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	terms := newTermStore(p, fx)
	gs, err := p.makeGroups(p.train, streamBatch)
	if err != nil {
		tb.Fatal(err)
	}
	chs := make([]*table.BlockChunk, len(gs))
	ts := make([][][]ownTerm, len(gs))
	for c, gr := range gs {
		ch := &table.BlockChunk{Seqs: gr.seqs, Blocks: make([]int, len(gr.seqs)), Labels: make([]string, len(gr.seqs))}
		ts[c] = make([][]ownTerm, len(gr.seqs))
		for b, i := range gr.seqs {
			ch.Blocks[b], ch.Labels[b], ts[c][b] = i, fmt.Sprint(i), terms.of(i)
		}
		chs[c] = ch
	}
	return &blockChunkBench{p: p, spec: spec, s: newGroupStream(p, gs), chs: chs, terms: ts}
}

// run runs the pass once, handing every chunk's output to keep.
func (bb *blockChunkBench) run(ctx context.Context, keep func(c int, out *table.BlockChunkOut)) error {
	return bb.s.run(ctx, true, false, func(c int, _ *group, grads, rows [][][]float64) error {
		out, err := bb.spec.mapChunk(bb.chs[c], bb.terms[c], grads, rows)
		if err != nil {
			return err
		}
		keep(c, out)
		return nil
	})
}

// BenchmarkBlockChunk is the low-rank block pass (in-sample rule) of 640
// sequences of the 64-unit LSTM, in chunks of 64 on the problem's
// workers: its CPU per sequence (cpu-ms/seq) is the figure that scales
// to the million-sequence run's block pass.
func BenchmarkBlockChunk(b *testing.B) {
	const n = 640
	bb := newBlockChunkBench(b, n)
	if err := bb.run(b.Context(), func(int, *table.BlockChunkOut) {}); err != nil { // the example analysis, once per pass
		b.Fatal(err)
	}
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		if err := bb.run(b.Context(), func(int, *table.BlockChunkOut) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N*n), "cpu-ms/seq")
}
