package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// zooDir holds the zoo of exports practitioners make, built by
// make_zoo.py there, with float64 PyTorch references.
const zooDir = "../../onnx/testdata/zoo"

// zooMissing is the one table of zoo entries that need a capability main
// does not have yet, per test: forward (load and match PyTorch) or audit.
// Remove an entry as soon as the capability lands; an entry listed here must
// fail without it (TestZooMissingIsMissing).
var zooMissing = map[string]struct{ forward, audit string }{}

// missing returns why the named zoo entry cannot pass yet (forward or
// audit), or "". Entries are keyed by name or by name without the opset.
func missing(name string, audit bool) string {
	m, ok := zooMissing[name]
	if !ok {
		m = zooMissing[name[:strings.LastIndex(name, "_op")]]
	}
	if audit {
		if m.forward != "" {
			return m.forward
		}
		return m.audit
	}
	return m.forward
}

// zooDoc is one <name>.json of the zoo.
type zooDoc struct {
	Model  string `json:"model"`
	Train  string `json:"train"`
	Inputs []struct {
		Name  string    `json:"name"`
		DType string    `json:"dtype"`
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"inputs"`
	Outputs []struct {
		Name  string    `json:"name"`
		Shape []int     `json:"shape"`
		Data  []float64 `json:"data"`
	} `json:"outputs"`
	Grad map[string][]float64 `json:"grad"`
}

func zooEntries(t *testing.T) map[string]*zooDoc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(zooDir, "*.json"))
	if err != nil || len(files) < 30 {
		t.Fatalf("the zoo in %s has %d entries: %v", zooDir, len(files), err)
	}
	out := map[string]*zooDoc{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := new(zooDoc)
		if err := json.Unmarshal(b, d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = d
	}
	return out
}

// zooForward loads an entry and checks its outputs against PyTorch's
// float64 outputs to 1e-10 (relative to max(1, |y|)), the gradient of
// 0.5*sum(y^2) (first output) along a direction in all parameters against
// central differences (1e-6), and that gradient with respect to the
// initializers PyTorch reports against autograd to 1e-9.
func zooForward(d *zooDoc) error {
	g, err := onnx.Load(filepath.Join(zooDir, d.Model))
	if err != nil {
		return err
	}
	const tol = 1e-10
	ins := make([]*graph.Tensor, len(g.Inputs))
	for i, in := range g.Inputs {
		for _, x := range d.Inputs {
			if x.Name != in.Name {
				continue
			}
			if x.DType == "int64" {
				v := make([]int64, len(x.Data))
				for j, f := range x.Data {
					v[j] = int64(f)
				}
				ins[i] = graph.NewInt(x.Shape, v)
			} else {
				ins[i] = graph.NewFloat(x.Shape, x.Data)
			}
		}
		if ins[i] == nil {
			return fmt.Errorf("no reference data for input %q", in.Name)
		}
	}
	p, err := g.Compile(ins)
	if err != nil {
		return err
	}
	st := p.NewState()
	outs, err := st.Forward(g.Theta(), ins)
	if err != nil {
		return err
	}
	if len(outs) != len(d.Outputs) {
		return fmt.Errorf("%d outputs, PyTorch gives %d", len(outs), len(d.Outputs))
	}
	for k, o := range outs {
		want := d.Outputs[k]
		if !slices.Equal(o.Shape, want.Shape) {
			return fmt.Errorf("output %d has shape %v, PyTorch %v", k, o.Shape, want.Shape)
		}
		for i, w := range want.Data {
			if diff := math.Abs(o.F[i] - w); !(diff <= tol*math.Max(1, math.Abs(w))) {
				return fmt.Errorf("output %d element %d: %.17g, PyTorch %.17g (difference %.3g)", k, i, o.F[i], w, diff)
			}
		}
	}
	seeds := make([]*graph.Tensor, len(outs))
	seeds[0] = graph.NewFloat(outs[0].Shape, append([]float64(nil), outs[0].F...))
	grad := make([]float64, g.NumParams())
	if err := st.Backward(seeds, grad); err != nil {
		return err
	}
	// Every parameter: the gradient along a fixed direction against
	// central differences of the loss.
	theta := g.Theta()
	loss := func(th []float64) (float64, error) {
		ys, err := st.Forward(th, ins)
		if err != nil {
			return 0, err
		}
		l := 0.0
		for _, y := range ys[0].F {
			l += y * y / 2
		}
		return l, nil
	}
	const h = 1e-6
	plus, minus := slices.Clone(theta), slices.Clone(theta)
	dot := 0.0
	for i := range theta {
		v := math.Sin(float64(i) + 1)
		plus[i] += h * v
		minus[i] -= h * v
		dot += grad[i] * v
	}
	lp, err := loss(plus)
	if err != nil {
		return err
	}
	lm, err := loss(minus)
	if err != nil {
		return err
	}
	if fd := (lp - lm) / (2 * h); math.Abs(fd-dot) > 1e-6*math.Max(1, math.Abs(dot)) {
		return fmt.Errorf("directional derivative %.12g, central differences %.12g", dot, fd)
	}
	for _, prm := range g.Params() {
		want, ok := d.Grad[prm.Name]
		if !ok {
			continue
		}
		for i, w := range want {
			got := grad[prm.Offset+i]
			if diff := math.Abs(got - w); !(diff <= 10*tol*math.Max(1, math.Abs(w))) {
				return fmt.Errorf("gradient of %q element %d: %.17g, PyTorch %.17g", prm.Name, i, got, w)
			}
		}
	}
	return nil
}

// TestZooForward loads every zoo export and compares it with PyTorch.
func TestZooForward(t *testing.T) {
	for name, d := range zooEntries(t) {
		t.Run(name, func(t *testing.T) {
			if why := missing(name, false); why != "" {
				t.Skip("needs " + why)
			}
			if err := zooForward(d); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestZooMissingIsMissing fails for a zoo entry skipped in zooMissing that
// now passes: its skip must be removed.
func TestZooMissingIsMissing(t *testing.T) {
	for name, d := range zooEntries(t) {
		if why := missing(name, false); why != "" {
			if err := zooForward(d); err == nil {
				t.Errorf("%s: skipped for %q but its forward pass matches PyTorch: remove it from zooMissing", name, why)
			}
			continue
		}
		if why := missing(name, true); why != "" && !testing.Short() {
			if err := zooAudit(t, name, d); err == nil {
				t.Errorf("%s: its audit is skipped for %q but passes: remove it from zooMissing", name, why)
			}
		}
	}
}

// zooAudit audits a zoo export on its training CSV (40 sequences of 12
// steps, leaving one sequence out) and checks that every interval is
// finite.
func zooAudit(t *testing.T, name string, d *zooDoc) error {
	out := filepath.Join(t.TempDir(), name+".json")
	args := []string{"--model", filepath.Join(zooDir, d.Model), "--data", filepath.Join(zooDir, d.Train),
		"--features", "x1,x2", "--quiet", "--json", out}
	code, _, stderr := runCmd(args...)
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var r struct {
		Summary struct {
			Infinite int     `json:"infinite_intervals"`
			Points   int     `json:"points"`
			Coverage float64 `json:"coverage"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	if r.Summary.Points == 0 || r.Summary.Infinite != 0 {
		return fmt.Errorf("%d of %d intervals unbounded", r.Summary.Infinite, r.Summary.Points)
	}
	t.Logf("%s: %d points, coverage %.3f", name, r.Summary.Points, r.Summary.Coverage)
	return nil
}

// TestZooAudit audits every zoo export (zooAudit).
func TestZooAudit(t *testing.T) {
	if testing.Short() {
		t.Skip("audits 38 models")
	}
	for name, d := range zooEntries(t) {
		t.Run(name, func(t *testing.T) {
			if why := missing(name, true); why != "" {
				t.Skip("needs " + why)
			}
			if err := zooAudit(t, name, d); err != nil {
				t.Fatal(err)
			}
		})
	}
}
