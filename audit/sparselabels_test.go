package audit

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// blankTargets returns the CSV text of file with the target cell (the
// last column) emptied on every row of a sequence but its last keep rows,
// the rows a many-to-one model with keep horizons forecasts. The file's
// rows are in step order within each sequence.
func blankTargets(t *testing.T, file string, keep int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	rowsOf := map[string]int{}
	for _, l := range lines[1:] {
		rowsOf[strings.SplitN(l, ",", 2)[0]]++
	}
	seen := map[string]int{}
	for i, l := range lines[1:] {
		id := strings.SplitN(l, ",", 2)[0]
		if r := seen[id]; r < rowsOf[id]-keep {
			lines[i+1] = l[:strings.LastIndexByte(l, ',')+1]
		}
		seen[id]++
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestLabelsOnlyWhereForecast: a many-to-one model with H = 3 values
// (linear_horizons, seq2seq) needs a label only on the last 3 rows of a
// sequence, the rows its values forecast. Files whose other target cells
// are empty ("no label here") give the audit of the fully labelled files
// (the filler targets have no loss term, residual or coverage count):
// every limit and prediction equal to 1e-12, the same loss terms and
// coverage.
func TestLabelsOnlyWhereForecast(t *testing.T) {
	for _, name := range []string{"linear_horizons", "seq2seq"} {
		t.Run(name, func(t *testing.T) {
			g, fx := loadModelio(t, name, "")
			train, test := readModelio(t, name)
			opt := &Options{Layout: graph.BatchFirst, Horizons: 3}
			if fx.Layout == "time-first" {
				opt.Layout = graph.TimeFirst
			}
			full, err := Run(context.Background(), g, train, test, opt)
			if err != nil {
				t.Fatal(err)
			}
			read := func(part string, o *blocks.Options) *blocks.Dataset {
				text := blankTargets(t, filepath.Join(modelioDir, name+"_"+part+".csv"), 3)
				d, err := blocks.Read(strings.NewReader(text), part+".csv", o)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			strain := read("train", nil)
			stest := read("test", &blocks.Options{Features: strain.Features})
			for _, s := range strain.Seqs {
				for r := range s.Len() {
					if s.HasTarget(r) != (r >= s.Len()-3) {
						t.Fatalf("sequence %s row %d: labelled %v", s.ID, r, s.HasTarget(r))
					}
				}
			}
			sparse, err := Run(context.Background(), g, strain, stest, opt)
			if err != nil {
				t.Fatal(err)
			}
			if full.Setting.LossTerms != sparse.Setting.LossTerms || sparse.Setting.LossTerms != 3*len(train.Seqs) {
				t.Errorf("loss terms %d with every row labelled, %d with the forecast rows; want %d", full.Setting.LossTerms, sparse.Setting.LossTerms, 3*len(train.Seqs))
			}
			if len(full.Sequences) != len(sparse.Sequences) {
				t.Fatalf("%d and %d sequences", len(full.Sequences), len(sparse.Sequences))
			}
			n := 0
			for i, fs := range full.Sequences {
				ss := sparse.Sequences[i]
				if len(fs.Steps) != len(ss.Steps) {
					t.Fatalf("sequence %s: %d and %d forecasts", fs.ID, len(fs.Steps), len(ss.Steps))
				}
				for k, a := range fs.Steps {
					b := ss.Steps[k]
					for _, v := range [][2]float64{{a.Prediction, b.Prediction}, {a.Lower, b.Lower}, {a.Upper, b.Upper}, {a.NaiveLower, b.NaiveLower}, {a.NaiveUpper, b.NaiveUpper}} {
						if math.Abs(v[0]-v[1]) > 1e-12*(1+math.Abs(v[0])) {
							t.Errorf("sequence %s row %d horizon %d: %.15g with every row labelled, %.15g with the forecast rows", fs.ID, a.Row, a.Horizon, v[0], v[1])
						}
					}
					if a.M != b.M || (a.Target == nil) != (b.Target == nil) || (a.Target != nil && *a.Target != *b.Target) {
						t.Errorf("sequence %s row %d: m %d/%d, targets %v/%v", fs.ID, a.Row, a.M, b.M, a.Target, b.Target)
					}
					n++
				}
			}
			if n == 0 || full.Summary.Coverage != sparse.Summary.Coverage || full.Summary.Points != sparse.Summary.Points {
				t.Errorf("%d forecasts; coverage %v of %d and %v of %d", n, full.Summary.Coverage, full.Summary.Points, sparse.Summary.Coverage, sparse.Summary.Points)
			}
		})
	}
}

// TestWithinTrainingInside: forecasts without residuals at a row before
// one with residuals (a row no training sequence labels) are Inside;
// those after the last row with residuals (past the training sequences,
// or the rows a shift leaves unlabelled at their end) are not.
func TestWithinTrainingInside(t *testing.T) {
	pts := func() []point {
		var out []point
		for r := range 3 {
			out = append(out, point{f: forecast{T: r}, has: true})
		}
		return out
	}
	for _, c := range []struct {
		m      []int
		from   int
		inside bool
	}{
		{[]int{5, 0, 5}, 1, true},
		{[]int{0, 5, 5}, 0, true},
		{[]int{5, 5, 0}, 2, false},
		{[]int{5, 0, 0}, 1, false},
	} {
		_, b := withinTraining(pts(), limits{m: c.m})
		if b == nil || b.FromRow != c.from || b.Inside != c.inside || b.Labelled != 3-countPositive(c.m) {
			t.Errorf("m %v: %+v; want from row %d, inside %v", c.m, b, c.from, c.inside)
		}
	}
}

func countPositive(m []int) int {
	n := 0
	for _, v := range m {
		if v > 0 {
			n++
		}
	}
	return n
}
