package reports

import (
	"io"
	"math/rand/v2"
	"testing"
)

// BenchmarkReportsMillionBlocks writes the JSON, HTML and text summary of
// a result with a million blocks' influence norms (the fixture's
// sequences otherwise): the part of the reports that grows with the
// training set (about 50 CPU s at a million sequences).
func BenchmarkReportsMillionBlocks(b *testing.B) {
	r := fixture()
	rng := rand.New(rand.NewPCG(1, 2))
	norms := make([]float64, 1_000_000)
	for i := range norms {
		norms[i] = rng.ExpFloat64() * 1e-3
	}
	r.Diag.InfluenceNorms = norms
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"json", func() error { return WriteJSON(io.Discard, r, nil) }},
		{"html", func() error { return WriteHTML(io.Discard, r, nil) }},
		{"summary", func() error { return WriteSummary(io.Discard, r) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if err := tc.write(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
