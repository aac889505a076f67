package membudget

import (
	"errors"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// The sizes of the scale benchmarks' two LSTMs (the 17k one and
// benchmarks/large's), worked by hand: 17,217 parameters
// with 10 forecasts per sequence, 794,881 with 20.
func TestStreamBatch(t *testing.T) {
	cases := []struct {
		name                         string
		budget                       int64
		P, vecs, workers, most, want int
	}{
		// 8 GiB / 4 = 2 GiB over 2 workers × 11 vectors × 137,736 bytes
		// = 3,030,192 bytes: 708 sequences, capped at 64.
		{"small model keeps 64", 8 << 30, 17217, 11, 2, 64, 64},
		// 2 GiB over 2 × 21 × 6,359,048 = 267,080,016 bytes: 8.04.
		{"large model", 8 << 30, 794881, 21, 2, 64, 8},
		// 256 MiB / 4 = 64 MiB < one sequence's 133.5 MB: still 1.
		{"at least one", 256 << 20, 794881, 21, 1, 64, 1},
	}
	for _, c := range cases {
		if got := StreamBatch(c.budget, c.P, c.vecs, c.workers, c.most); got != c.want {
			t.Errorf("%s: StreamBatch = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestProbeSeqs(t *testing.T) {
	// 512 MiB / (10 × 137,736) = 389: all 16.
	if got := ProbeSeqs(17217, 10, 16); got != 16 {
		t.Errorf("17k LSTM: %d probes, want 16", got)
	}
	// 536,870,912 / (20 × 6,359,048) = 4.2: 4.
	if got := ProbeSeqs(794881, 20, 16); got != 4 {
		t.Errorf("795k LSTM: %d probes, want 4", got)
	}
	// Never fewer than 2.
	if got := ProbeSeqs(50_000_000, 20, 16); got != 2 {
		t.Errorf("50M parameters: %d probes, want 2", got)
	}
}

func TestParse(t *testing.T) {
	for s, want := range map[string]int64{"6G": 6 << 30, "6GB": 6 << 30, "6GiB": 6 << 30, "512M": 512 << 20, "1.5g": 3 << 29, "4096": 4096, " 2k ": 2048} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "G", "-1G", "0", "six", "1e30T"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q): no error", s)
		}
	}
}

func TestCheck(t *testing.T) {
	// The 795k LSTM at rank 200: the factor is 1,271,809,600 bytes,
	// 2 workers × 21 vectors 267 MB, the table of 20,000 blocks
	// 35.2 MB: 1,574,089,616 bytes, 1.466 GiB.
	if err := Check(6<<30, 794881, 200, 21, 2, 20000, 20); err != nil {
		t.Fatalf("6 GiB: %v", err)
	}
	err := Check(1<<30, 794881, 200, 21, 2, 20000, 20)
	var oe *errs.OptionError
	if !errors.As(err, &oe) {
		t.Fatalf("1 GiB: %v, want an option error", err)
	}
	for _, w := range []string{"1.47 GiB", "rank-200", "1 GiB"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q does not say %q", err, w)
		}
	}
}

func TestFinalizeChunk(t *testing.T) {
	// 192 MiB / (8 × 1000 × 2) = 12,582: capped at 512; at 10^6 blocks
	// 12, raised to 32.
	if got := FinalizeChunk(1000, 2); got != 512 {
		t.Errorf("1000 blocks: %d", got)
	}
	if got := FinalizeChunk(1_000_000, 2); got != 32 {
		t.Errorf("10^6 blocks: %d", got)
	}
	if got := FinalizeChunk(100_000, 1); got != 251 {
		t.Errorf("10^5 blocks: %d", got)
	}
}

func TestStream(t *testing.T) {
	// 8 GiB: the 795k LSTM's check passes and its chunks are 8 sequences
	// (TestStreamBatch); 1 GiB: Check's error.
	if b, err := Stream(8<<30, 794881, 200, 20, 2, 20000, 64); b != 8 || err != nil {
		t.Errorf("8 GiB: %d, %v; want 8", b, err)
	}
	if _, err := Stream(1<<30, 794881, 200, 20, 2, 20000, 64); err == nil {
		t.Error("1 GiB: no error")
	}
	// The default budget is positive and takes a small model's 64.
	if b, err := Stream(0, 481, 120, 10, 2, 1000, 64); b != 64 || err != nil {
		t.Errorf("default budget: %d, %v; want 64", b, err)
	}
}

func TestCurvatureBatch(t *testing.T) {
	// A batch of 512 sequences whose State is 800,000,000 bytes: 1,562,500
	// (+1) a sequence, three times over on each of 2 workers, 9,375,006
	// bytes a sequence in a quarter of 8 GiB (2,147,483,648): 229.
	if got := CurvatureBatch(8<<30, 800_000_000, 512, 2); got != 229 {
		t.Errorf("wide model: %d sequences, want 229", got)
	}
	// A State of 10 MB keeps the 512.
	if got := CurvatureBatch(8<<30, 10_000_000, 512, 2); got != 512 {
		t.Errorf("narrow model: %d sequences, want 512", got)
	}
	if got := CurvatureBatch(1<<20, 800_000_000, 512, 2); got != 1 {
		t.Errorf("tiny budget: %d sequences, want 1", got)
	}
}
