package audit_test

import (
	"context"
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestMemoryBudgetSameLimits: a budget small enough to split the low-rank
// path's chunks and the curvature's batches (2 MB: chunks of 6 sequences
// instead of 64, curvature batches of 17 sequences instead of 100, as
// measured with a print) gives the limits of the default budget, to
// rounding (measured: identical): the budget
// moves memory, not results (package membudget). The paper's RNN (481
// parameters) on the first 100 training and 200 test sequences, with the
// per-block rule and its refinement, which reads the curvature's batches
// again.
func TestMemoryBudgetSameLimits(t *testing.T) {
	g, _, ds := synthetic(t, "model.onnx", "train_small.csv", "test_small.csv")
	run := func(memory int64) *audit.Result {
		res, err := audit.Run(context.Background(), g, ds[0], ds[1], &audit.Options{Layout: graph.BatchFirst, Solver: audit.LowRank, Rank: 40, Seed: 1, Workers: 2, Memory: memory})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	def, small := run(0), run(2<<20)
	worst := 0.0
	for i, s := range def.Sequences {
		for j, st := range s.Steps {
			o := small.Sequences[i].Steps[j]
			w := st.Upper - st.Lower
			if math.IsInf(w, 0) {
				if o.Lower != st.Lower || o.Upper != st.Upper {
					t.Fatalf("sequence %s step %d: [%g, %g] against [%g, %g]", s.ID, j, o.Lower, o.Upper, st.Lower, st.Upper)
				}
				continue
			}
			worst = math.Max(worst, math.Max(math.Abs(o.Lower-st.Lower), math.Abs(o.Upper-st.Upper))/w)
		}
	}
	if worst > 1e-8 {
		t.Errorf("the 2 MB budget moved a limit by %.3g of its width", worst)
	}
	t.Logf("largest difference %.3g of the width; refined blocks %d and %d", worst, def.Diag.RefinedBlocks, small.Diag.RefinedBlocks)
}
