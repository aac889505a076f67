// Package membudget bounds the memory of the low-rank path (package
// audit, scalable.go) for models of hundreds of thousands of parameters
// and more, where one vector of P parameters is megabytes and the
// streaming passes' chunks, not the block table, decide the peak.
//
// The budget (audit.Options.Memory, the command's --memory) is a number
// of bytes, by default a share of the machine's physical memory
// (Default). The streaming passes size their chunks of sequences from it
// (StreamBatch); the probe sequences are bounded by a fixed size
// (ProbeSeqs), so that results do not depend on the machine; and Check
// says, before the curvature is built, when the factor and the smallest
// chunks cannot fit, naming what to change.
//
// Sizes only move memory: the per-sequence gradients and Jacobian rows
// do not depend on which sequences share a chunk, and the sums over
// chunks are exact (table.GradientSum), so the result is the same for
// every budget that fits.
package membudget

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// The options Check's error names: the budget (audit.Options.Memory,
// --memory) and the rank (audit.Options.Rank, --rank).
const (
	OptMemory errs.Option = "audit.Options.Memory"
	OptRank   errs.Option = "audit.Options.Rank"
)

const (
	// DefaultShare is the share of the machine's physical memory the
	// default budget takes: the rest is the operating system's and the
	// other processes'; the Go collector lets the heap grow beyond the
	// live data (GOMEMLIMIT bounds that).
	DefaultShare = 0.5
	// fallback is the default budget where the physical memory cannot
	// be read (no /proc/meminfo).
	fallback = 4 << 30
	// StreamShare is the share of the budget the chunks in flight of a
	// streaming pass may take; the factor (k × P floats), the block
	// table and the evaluator's states take the rest.
	StreamShare = 0.25
	// ProbeBytes bounds the probe sequences' output-Jacobian rows (a
	// fixed size, not a share of the budget, so that the probes, which
	// choose the factor's complement constant, are the same on every
	// machine): 512 MiB keeps all 16 probes of a 17,217-parameter LSTM
	// of 10 forecasts per sequence and 4 of a 794,881-parameter one of
	// 20 forecasts.
	ProbeBytes = 512 << 20
)

// Default returns the default budget: DefaultShare of the physical
// memory (MemTotal in /proc/meminfo), or 4 GiB when it cannot be read.
func Default() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) >= 2 && fs[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil || kb <= 0 {
				break
			}
			return int64(DefaultShare * float64(kb<<10))
		}
	}
	return fallback
}

// Parse reads a budget such as 6G, 6GB, 6GiB, 512M or a plain number of
// bytes (K, M, G and T are powers of 1024; B and iB are optional).
func Parse(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(v > 0) || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a memory size: give one such as 6G or 512M", s)
	}
	return int64(v * float64(mult)), nil
}

// vecBytes is the size of one vector of P float64 parameters.
func vecBytes(P int) int64 { return 8 * int64(max(P, 1)) }

// StreamBatch returns the sequences per chunk of a streaming pass whose
// sequences carry vecs vectors of P parameters each (the loss gradient,
// and under the per-block rule one Jacobian row per forecast), with
// workers chunks in flight, so that they take at most StreamShare of
// budget: at most most, at least 1.
func StreamBatch(budget int64, P, vecs, workers, most int) int {
	per := vecBytes(P) * int64(max(vecs, 1)) * int64(max(workers, 1))
	b := int64(StreamShare*float64(budget)) / per
	return int(max(1, min(int64(most), b)))
}

// Stream returns the sequences per chunk of the low-rank path's
// streaming passes (StreamBatch, at most most) of a model of P parameters,
// rank k and F forecasts per sequence, with workers chunks in flight and
// n blocks, within budget (0: Default); or Check's error when they
// cannot fit.
func Stream(budget int64, P, k, F, workers, n, most int) (int, error) {
	if budget <= 0 {
		budget = Default()
	}
	if err := Check(budget, P, k, 1+F, workers, n, F); err != nil {
		return 0, err
	}
	return StreamBatch(budget, P, 1+F, workers, most), nil
}

// CurvatureBatch returns the sequences per batch of the curvature's
// products when a batch of most sequences has a State of stateBytes
// (graph.Program.StateBytes): each worker holds one State with its
// tangent and cotangent buffers (three times stateBytes), and together
// they take at most StreamShare of budget (0: Default). It is most when
// that fits (every model but the largest: the result is then unchanged),
// else smaller, at least 1.
func CurvatureBatch(budget int64, stateBytes, most, workers int) int {
	if budget <= 0 {
		budget = Default()
	}
	per := 3 * int64(max(workers, 1)) * (int64(stateBytes)/int64(max(most, 1)) + 1)
	return int(max(1, min(int64(most), int64(StreamShare*float64(budget))/per)))
}

// ProbeSeqs returns how many probe sequences of rows output-Jacobian rows
// of P parameters each fit in ProbeBytes: at most most, at least 2 (the
// probes estimate a mean; one would be no estimate).
func ProbeSeqs(P, rows, most int) int {
	b := int64(ProbeBytes) / (vecBytes(P) * int64(max(rows, 1)))
	return int(max(2, min(int64(most), b)))
}

// Check returns an error when the low-rank path cannot run within
// budget: the factor's k rows of P parameters (Lanczos forms them in
// place of its vectors, hvp.NewLowRank), plus the smallest
// chunks in flight (one sequence of vecs vectors per worker) and the
// block table's n × (k + forecasts) floats. The message names the
// figures and what to change.
func Check(budget int64, P, k, vecs, workers, n, forecasts int) error {
	factor := vecBytes(P) * int64(k)
	need := factor + vecBytes(P)*int64(max(vecs, 1))*int64(max(workers, 1)) + 8*int64(n)*int64(k+forecasts)
	if need <= budget {
		return nil
	}
	return errs.Fix([]errs.Option{OptMemory, OptRank}, "audit: the low-rank path needs at least %s (the rank-%d factor of %d parameters, %s; one sequence's %d gradient and Jacobian vectors per worker; the block table of %d blocks) and the memory budget is %s: raise the budget or lower the rank",
		Format(need), k, P, Format(factor), vecs, n, Format(budget))
}

// Format writes a size in bytes in KiB, MiB or GiB with three
// significant figures.
func Format(b int64) string {
	unit, name := float64(1<<10), " KiB"
	if b >= 1<<30 {
		unit, name = 1<<30, " GiB"
	} else if b >= 1<<20 {
		unit, name = 1<<20, " MiB"
	}
	return strconv.FormatFloat(float64(b)/unit, 'g', 3, 64) + name
}

// The limits phase's chunks of points (moved from package audit, unchanged).
const (
	// FinalizeBytes bounds the shifts of the points in flight in the
	// limits phase (FinalizeChunk).
	FinalizeBytes    = 192 << 20
	finalizeChunkMin = 32
	finalizeChunkMax = 512
)

// FinalizeChunk is the number of points of one table.FinalizeLimits call
// with n blocks: their shifts, one matrix product that reads the whole
// block table (the more points per call, the fewer passes over it), take
// FinalizeBytes / (8 n workers) points, at least finalizeChunkMin and at
// most finalizeChunkMax.
func FinalizeChunk(n, workers int) int {
	return min(finalizeChunkMax, max(finalizeChunkMin, FinalizeBytes/(8*max(1, n)*max(1, workers))))
}
