package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit/datacheck"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// passBudget is the memory that the passes over the longest sequence may
// take: 1 GiB. A recurrent model is unrolled over a sequence's steps, so a
// single sequence of 200,000 steps asks for gigabytes whatever the model's
// size, and the Go runtime ends a process that runs out of memory with a
// crash, not an error; checkSequenceMemory refuses such data first.
const passBudget = 1 << 30

// passFactor is the memory of the audit's passes over one sequence, as a
// multiple of graph.Program.StateBytes: the derivative buffers and one
// State per worker. Measured on examples/synthetic/model_small.onnx with a
// sequence of 200,000 steps: 1.4 GB in use when the dense curvature ran out
// of a 3 GiB address space, 8 times StateBytes (173 MB).
const passFactor = 8

// checkSequenceMemory returns an error naming the longest sequence of the
// data sets when the passes over it would take more than passBudget. The
// memory is extrapolated from the model compiled for two short lengths
// (it is linear in the number of steps); a model that does not compile
// for them is left for the audit to report.
func checkSequenceMemory(g *graph.Graph, layout onnx.Layout, sets ...*blocks.Dataset) error {
	var long *blocks.Sequence
	var file string
	for _, d := range sets {
		if d == nil {
			continue
		}
		for _, s := range d.Seqs {
			if long == nil || len(s.Steps) > len(long.Steps) {
				long, file = s, d.File
			}
		}
	}
	const t0, t1 = 64, 128
	if long == nil || len(long.Steps) <= t1 {
		return nil
	}
	size := func(steps int) (int, bool) {
		in, _, _, skip, err := zeroInputs(g, layout, 1, steps)
		if skip != "" || err != nil {
			return 0, false
		}
		p, err := g.Compile(in)
		if err != nil {
			return 0, false
		}
		return p.StateBytes(), true
	}
	b0, ok0 := size(t0)
	b1, ok1 := size(t1)
	if !ok0 || !ok1 {
		return nil
	}
	T := len(long.Steps)
	perStep := float64(b1-b0) / (t1 - t0)
	need := passFactor * (float64(b0) + perStep*float64(T-t0))
	if need <= passBudget {
		return nil
	}
	return fmt.Errorf("%s: sequence %q has %d steps: the model, unrolled over them, would need about %.1f GB for the audit's passes over that one sequence, more than the budget of 1 GiB; split long sequences into shorter ones (each part with its own id), of at most about %d steps",
		file, long.ID, T, need/1e9, int(float64(T)*passBudget/need))
}

// blockNotice says, for interval or nested blocks whose length leaves
// fewer than two intervals with a target (a --block-length as long as the
// longest sequence), that the audit falls back to sequence blocks; ""
// otherwise. The fallback is in the report's notes; this says it on the
// terminal, before the audit runs.
func blockNotice(train *blocks.Dataset, kind blocks.Kind, k int) string {
	if kind == blocks.Sequences {
		return ""
	}
	s, err := blocks.NewScheme(train, kind, k)
	if err != nil || !s.Degenerate {
		return ""
	}
	return fmt.Sprintf("--block-length %d leaves fewer than two intervals that hold a target (the longest sequence of %s has %d steps), so the audit uses sequence blocks, as with --blocks sequence; choose a shorter --block-length for %s blocks",
		k, train.File, train.MaxLen(), kind)
}

// windowedNotice says, when the training sequences of f.data look like
// overlapping windows of longer series (datacheck.DetectWindowed), what
// was found and the command that audits the series with --window; ""
// otherwise.
func windowedNotice(train *blocks.Dataset, f *flags) string {
	w := datacheck.DetectWindowed(train)
	if w == nil {
		return ""
	}
	series := func(file string) string { return strings.TrimSuffix(file, ".csv") + "_series.csv" }
	features := strings.Join(train.Features, ",")
	cmd := []string{"audit", "--model", f.model, "--data", series(f.data)}
	if f.test != "" {
		cmd = append(cmd, "--test", series(f.test))
	}
	if train.IDCol != "id" {
		cmd = append(cmd, "--id-col", train.IDCol)
	}
	if train.TimeCol != "t" {
		cmd = append(cmd, "--time-col", train.TimeCol)
	}
	cols := fmt.Sprintf("%s, %s, %s and %s", train.IDCol, train.TimeCol, features, train.Targets[0])
	if w.NextValue != "" {
		// The target is the next value of a feature: the series holds
		// that value once, and --shift 1 takes the target from the next row.
		cols = fmt.Sprintf("%s, %s and %s", train.IDCol, train.TimeCol, features)
		cmd = append(cmd, "--features", features, "--target", w.NextValue, "--shift", "1")
	} else {
		cmd = append(cmd, "--features", features, "--target", train.Targets[0])
	}
	cmd = append(cmd, "--window", strconv.Itoa(w.Len))
	for i, a := range cmd {
		cmd[i] = shellWord(a)
	}
	return fmt.Sprintf("%s. Give each series once, one row per time step (columns %s), and let the audit cut the windows and leave out stretches of time: %s",
		w.Text(train.File), cols, strings.Join(cmd, " "))
}

// shellWord quotes a word for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ',' || r == ':' || r == '=' || r == '+' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
