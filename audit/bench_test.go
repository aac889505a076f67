package audit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// arData returns n sequences of T steps from the paper's AR process:
// x_t ~ N(1, 2²), y_t = sum_{j<=t} 0.9^(t-j) x_j + eps_t, eps_t ~ N(0, (0.1 t)²).
func arData(name string, n, T int, seed uint64) *blocks.Dataset {
	r := rand.New(rand.NewPCG(seed, 17))
	d := &blocks.Dataset{File: name, IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}}
	for i := 0; i < n; i++ {
		s := &blocks.Sequence{ID: fmt.Sprint(i)}
		acc := 0.0
		for t := 1; t <= T; t++ {
			x := 1 + 2*r.NormFloat64()
			acc = 0.9*acc + x
			s.Steps = append(s.Steps, float64(t))
			s.X = append(s.X, []float64{x})
			s.Y = append(s.Y, []float64{acc + 0.1*float64(t)*r.NormFloat64()})
		}
		d.Seqs = append(d.Seqs, s)
	}
	return d
}

// BenchmarkAuditPaper is the whole audit at the paper's scale: 1000
// training and 1000 test sequences of 10 steps, a vanilla RNN with 20
// hidden units (481 parameters), the exact solver, the default estimator
// and curvature. Phase times are reported as extra metrics (seconds).
func BenchmarkAuditPaper(b *testing.B) {
	benchAuditPaper(b, &audit.Options{Layout: graph.BatchFirst, Solver: audit.Exact})
}

// BenchmarkAuditPaperInfinitesimal is BenchmarkAuditPaper with the
// paper's method: the infinitesimal jackknife with the Hessian.
func BenchmarkAuditPaperInfinitesimal(b *testing.B) {
	benchAuditPaper(b, &audit.Options{Layout: graph.BatchFirst, Solver: audit.Exact, Estimator: audit.Infinitesimal, Curvature: hvp.Hessian})
}

func benchAuditPaper(b *testing.B, opt *audit.Options) {
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "paper_rnn.onnx"))
	if err != nil {
		b.Fatal(err)
	}
	train, test := arData("train", 1000, 10, 1), arData("test", 1000, 10, 2)
	var res *audit.Result
	for b.Loop() {
		res, err = audit.Run(context.Background(), g, train, test, opt)
		if err != nil {
			b.Fatal(err)
		}
	}
	dumpBench(b, train, test, res)
	for _, p := range res.Diag.Phases {
		b.ReportMetric(p.Seconds, strings.ReplaceAll(p.Name, " ", "_")+"-s")
	}
}
