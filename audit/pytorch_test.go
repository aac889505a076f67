package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// bruteForce is one case of testdata/ (see its README.md): the whole
// procedure done by brute force in PyTorch (exact damped Hessian, a real
// forward pass per leave-one-out model, the same quantile rules).
type bruteForce struct {
	Case      string  `json:"case"`
	Model     string  `json:"model"`
	Layout    string  `json:"layout"`
	TrainCSV  string  `json:"train_csv"`
	TestCSV   *string `json:"test_csv"`
	SelfAudit bool    `json:"self_audit"`
	Curvature string  `json:"curvature"`
	Rho       float64 `json:"rho"`
	Alpha     float64 `json:"alpha"`
	Trace     float64 `json:"trace"`
	Lambda    float64 `json:"lambda"`
	Points    []struct {
		ID         string   `json:"id"`
		Row        int      `json:"row"`
		Prediction float64  `json:"prediction"`
		Lower      *float64 `json:"lower"`
		Upper      *float64 `json:"upper"`
		NaiveLower *float64 `json:"naive_lower"`
		NaiveUpper *float64 `json:"naive_upper"`
		M          int      `json:"m"`
	} `json:"points"`
	Metrics struct {
		Coverage      float64 `json:"coverage"`
		JointCoverage float64 `json:"joint_coverage"`
		MeanLength    float64 `json:"mean_length"`
		Infinite      int     `json:"infinite"`
		RMSE          float64 `json:"rmse"`
		NaiveCoverage float64 `json:"naive_coverage"`
		Points        int     `json:"points"`
	} `json:"metrics"`
}

func limit(p *float64, sign float64) float64 {
	if p == nil {
		return math.Inf(int(sign))
	}
	return *p
}

// TestAgainstBruteForce: our intervals agree with a brute-force PyTorch
// implementation of the same procedure to 1e-6 of the interval width, and
// the coverage figures are identical (vanilla RNN batch-first; GRU
// time-first with variable lengths; LSTM with packed sequences; another
// damping, the Gauss-Newton curvature and a self-audit).
func TestAgainstBruteForce(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 5 {
		t.Fatalf("brute-force reference cases missing from testdata (%d found)", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ref bruteForce
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(ref.Case, func(t *testing.T) {
			g, err := onnx.Load(filepath.Join("..", ref.Model))
			if err != nil {
				t.Fatal(err)
			}
			train, err := blocks.ReadFile(filepath.Join("testdata", ref.TrainCSV), nil)
			if err != nil {
				t.Fatal(err)
			}
			var test *blocks.Dataset
			if ref.TestCSV != nil && !ref.SelfAudit {
				if test, err = blocks.ReadFile(filepath.Join("testdata", *ref.TestCSV), &blocks.Options{OptionalTargets: true}); err != nil {
					t.Fatal(err)
				}
			}
			// The reference is the paper's infinitesimal jackknife with a
			// forward pass per leave-one-out model.
			opt := &audit.Options{Layout: graph.BatchFirst, Solver: audit.Exact, Estimator: audit.Infinitesimal,
				Curvature: hvp.Hessian, Damping: ref.Rho, Alpha: ref.Alpha}
			if ref.Layout == "time-first" {
				opt.Layout = graph.TimeFirst
			}
			if ref.Curvature == "gauss-newton" {
				opt.Curvature = hvp.GaussNewton
			}
			res, err := audit.Run(context.Background(), g, train, test, opt)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.Diag.Lambda-ref.Lambda) > 1e-9*ref.Lambda || math.Abs(res.Diag.Trace-ref.Trace) > 1e-9*math.Abs(ref.Trace) {
				t.Errorf("lambda %.12g trace %.12g; PyTorch %.12g, %.12g", res.Diag.Lambda, res.Diag.Trace, ref.Lambda, ref.Trace)
			}
			ours := map[string]audit.StepResult{}
			for _, s := range res.Sequences {
				for _, st := range s.Steps {
					ours[fmt.Sprintf("%s/%d", s.ID, st.Row)] = st
				}
			}
			if len(ours) != len(ref.Points) {
				t.Fatalf("%d forecasts, PyTorch %d", len(ours), len(ref.Points))
			}
			for _, p := range ref.Points {
				key := fmt.Sprintf("%s/%d", p.ID, p.Row)
				st, ok := ours[key]
				if !ok {
					t.Fatalf("no forecast %s", key)
				}
				if math.Abs(st.Prediction-p.Prediction) > 1e-9*(1+math.Abs(p.Prediction)) {
					t.Errorf("%s: prediction %.12g, PyTorch %.12g", key, st.Prediction, p.Prediction)
				}
				if st.M != p.M {
					t.Errorf("%s: m = %d, PyTorch %d", key, st.M, p.M)
				}
				for _, c := range []struct {
					name           string
					lo, up         float64
					wantLo, wantUp float64
				}{
					{"jackknife+", st.Lower, st.Upper, limit(p.Lower, -1), limit(p.Upper, 1)},
					{"naive", st.NaiveLower, st.NaiveUpper, limit(p.NaiveLower, -1), limit(p.NaiveUpper, 1)},
				} {
					w := c.wantUp - c.wantLo
					if math.IsInf(w, 0) {
						w = 1
					}
					for _, pair := range [][2]float64{{c.lo, c.wantLo}, {c.up, c.wantUp}} {
						if math.IsInf(pair[1], 0) || math.IsInf(pair[0], 0) {
							if pair[0] != pair[1] {
								t.Errorf("%s %s: limit %g, PyTorch %g", key, c.name, pair[0], pair[1])
							}
						} else if math.Abs(pair[0]-pair[1]) > 1e-6*w {
							t.Errorf("%s %s: limit %.12g, PyTorch %.12g (width %.4g)", key, c.name, pair[0], pair[1], w)
						}
					}
				}
			}
			// The pooled metrics leave out the forecasts that no training
			// sequence reaches (m = 0: unbounded for want of residuals,
			// Summary.Beyond): recomputed here from PyTorch's limits and
			// predictions and the data's targets over the others.
			s := res.Summary
			if s == nil {
				t.Fatal("no summary")
			}
			var m struct {
				Coverage, JointCoverage, MeanLength, RMSE, NaiveCoverage float64
				Infinite, Points                                         int
			}
			missed := map[string]bool{}
			covered, naive, finite := 0, 0, 0
			for _, p := range ref.Points {
				st := ours[fmt.Sprintf("%s/%d", p.ID, p.Row)]
				if st.Target == nil || p.M == 0 {
					continue
				}
				y := *st.Target
				lo, up := limit(p.Lower, -1), limit(p.Upper, 1)
				m.Points++
				missed[p.ID] = missed[p.ID] || !(lo <= y && y <= up)
				if lo <= y && y <= up {
					covered++
				}
				if limit(p.NaiveLower, -1) <= y && y <= limit(p.NaiveUpper, 1) {
					naive++
				}
				if math.IsInf(up-lo, 0) {
					m.Infinite++
				} else {
					m.MeanLength += up - lo
					finite++
				}
				m.RMSE += (y - p.Prediction) * (y - p.Prediction)
			}
			whole := 0
			for _, miss := range missed {
				if !miss {
					whole++
				}
			}
			m.Coverage, m.NaiveCoverage = float64(covered)/float64(m.Points), float64(naive)/float64(m.Points)
			m.JointCoverage, m.MeanLength = float64(whole)/float64(len(missed)), m.MeanLength/float64(finite)
			m.RMSE = math.Sqrt(m.RMSE / float64(m.Points))
			if m.Points == ref.Metrics.Points {
				// Nothing left out: PyTorch's own metrics (its naive
				// coverage is exact where a value lies on a limit, as in
				// a self-audit).
				r := ref.Metrics
				m.Coverage, m.JointCoverage, m.MeanLength, m.RMSE, m.NaiveCoverage, m.Infinite = r.Coverage, r.JointCoverage, r.MeanLength, r.RMSE, r.NaiveCoverage, r.Infinite
			}
			if math.Abs(s.Coverage-m.Coverage) > 1e-12 || math.Abs(s.JointCoverage-m.JointCoverage) > 1e-12 || s.Infinite != m.Infinite || math.Abs(s.Naive.Coverage-m.NaiveCoverage) > 1e-12 || s.Points != m.Points {
				t.Errorf("coverage %v joint %v infinite %d naive %v points %d; PyTorch %v %v %d %v %d",
					s.Coverage, s.JointCoverage, s.Infinite, s.Naive.Coverage, s.Points, m.Coverage, m.JointCoverage, m.Infinite, m.NaiveCoverage, m.Points)
			}
			if math.Abs(s.MeanLength-m.MeanLength) > 1e-6*m.MeanLength || math.Abs(s.RMSE-m.RMSE) > 1e-9*m.RMSE {
				t.Errorf("mean length %.10g rmse %.10g; PyTorch %.10g %.10g", s.MeanLength, s.RMSE, m.MeanLength, m.RMSE)
			}
		})
	}
}
