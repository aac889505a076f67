package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/internal/userfile"
	"github.com/rnnaudit/rnnaudit/reports"
)

// BenchmarkPredictOnePaper is `audit predict` of one new sequence (the
// first of examples/synthetic/test.csv) from the artifact of a fit on the
// paper-scale example (1000 sequences, the paper's RNN of 481
// parameters, ridge 10, defaults: 1000 blocks' steps, 4.2 MB), phase by
// phase as predictCmd runs them, and the whole command ("command"). In
// process, so warm: a new process also pays for its start, its first
// use of each type by gob and encoding/json and the page faults of a
// fresh heap (benchmarks/process.sh measures whole processes).
func BenchmarkPredictOnePaper(b *testing.B) {
	dir := b.TempDir()
	const ex = "../../examples/synthetic"
	model, art := ex+"/model.onnx", filepath.Join(dir, "a.rna")
	test, err := os.ReadFile(ex + "/test.csv")
	if err != nil {
		b.Fatal(err)
	}
	one := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(one, []byte(strings.Join(strings.SplitAfter(string(test), "\n")[:11], "")), 0o644); err != nil {
		b.Fatal(err)
	}
	if code := run([]string{"fit", "--model", model, "--data", ex + "/train.csv", "--ridge", "10", "--save", art, "--quiet"}, io.Discard, io.Discard, nil); code != 0 {
		b.Fatalf("fit: exit %d", code)
	}
	h, err := readArtifactHeader(art)
	if err != nil {
		b.Fatal(err)
	}
	g, sum, err := loadFitModel(model, "--model", h)
	if err != nil {
		b.Fatal(err)
	}
	load := func() *audit.Fitted {
		fh, _, err := userfile.Open(art, "--load", userfile.Artifact)
		if err != nil {
			b.Fatal(err)
		}
		defer fh.Close()
		f, err := audit.Load(fh, g, sum)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	ro := blocks.Options{IDCol: h.IDCol, TimeCol: h.TimeCol, Targets: h.Targets, Features: h.Features, Shift: h.Shift, OptionalTargets: true}
	data, err := blocks.ReadFile(one, &ro)
	if err != nil {
		b.Fatal(err)
	}
	f := load()
	res, err := f.Predict(context.Background(), data)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("header", func(b *testing.B) {
		for b.Loop() {
			if _, err := readArtifactHeader(art); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("model", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := loadFitModel(model, "--model", h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("artifact", func(b *testing.B) {
		for b.Loop() {
			load()
		}
	})
	b.Run("data", func(b *testing.B) {
		for b.Loop() {
			if _, err := blocks.ReadFile(one, &ro); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("predict", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Predict(context.Background(), data); err != nil {
				b.Fatal(err)
			}
		}
	})
	out := filepath.Join(dir, "p.json")
	b.Run("report", func(b *testing.B) {
		for b.Loop() {
			if _, err := reports.WriteFile(out, reports.JSON, res, &reports.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("command", func(b *testing.B) {
		for b.Loop() {
			if code := run([]string{"predict", "--load", art, "--model", model, "--data", one, "--quiet", "--out", out}, io.Discard, io.Discard, nil); code != 0 {
				b.Fatalf("predict: exit %d", code)
			}
		}
	})
}
