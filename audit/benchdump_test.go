package audit_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// benchDumpEnv names the folder into which benchAuditPaper writes its
// data and the audit's limits when set, so that benchmarks/torch_audit.py
// can run the PyTorch reference on the same sequences and compare its
// limits with ours (benchmarks/audit.sh): train.csv and test.csv (columns
// id, t, x, y; every float printed with strconv's shortest exact form),
// limits.csv (id, t, prediction, lower, upper) and setting.txt (rho and
// lambda, the relative and absolute damping).
const benchDumpEnv = "RNNAUDIT_BENCH_DUMP"

// dumpBench writes what benchDumpEnv describes, when it is set.
func dumpBench(b *testing.B, train, test *blocks.Dataset, res *audit.Result) {
	dir := os.Getenv(benchDumpEnv)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	write := func(name string, fill func(w *bufio.Writer)) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		fill(w)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []*blocks.Dataset{train, test} {
		write(d.File+".csv", func(w *bufio.Writer) {
			fmt.Fprintln(w, "id,t,x,y")
			for _, s := range d.Seqs {
				for t := range s.Steps {
					fmt.Fprintf(w, "%s,%s,%s,%s\n", s.ID, g(s.Steps[t]), g(s.X[t][0]), g(s.Y[t][0]))
				}
			}
		})
	}
	write("limits.csv", func(w *bufio.Writer) {
		fmt.Fprintln(w, "id,t,prediction,lower,upper")
		for _, s := range res.Sequences {
			for _, st := range s.Steps {
				fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", s.ID, g(st.Step), g(st.Prediction), g(st.Lower), g(st.Upper))
			}
		}
	})
	write("setting.txt", func(w *bufio.Writer) {
		fmt.Fprintf(w, "rho %s\nlambda %s\nestimator %s\ncurvature %s\n", g(res.Setting.Damping), g(res.Diag.Lambda), res.Setting.Estimator, res.Setting.Curvature)
	})
}
