package refit

import (
	"context"
	"math"
	"testing"

	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// ridgeOnly is the objective of a small model of audit/modelio/testdata
// whose every loss term has weight 0: only the ridge (r/2)|theta|^2 is
// left, over the model's parameters (theta, the trained ones).
func ridgeOnly(t *testing.T, r float64) (*hvp.Objective, []float64) {
	t.Helper()
	const dir = "../modelio/testdata"
	fx, err := onnxtest.ReadFixture(dir, "linear_horizons")
	if err != nil {
		t.Fatal(err)
	}
	g, err := fx.Load()
	if err != nil {
		t.Fatal(err)
	}
	in, err := fx.InputsFor(g)
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	n := len(fx.Outputs[0].Data)
	return &hvp.Objective{Loss: hvp.SquaredError, Ridge: r, Batches: []hvp.Batch{{Program: p, Inputs: in, Target: make([]float64, n), Weight: make([]float64, n)}}}, g.Theta()
}

// TestRefits: on a tilted ridge, (r/2)|theta|^2 - t.theta, whose only
// stationary point is the minimum t/r, every re-fit reaches it from the
// origin, and Newton and Root start from the Hessian r I.
func TestRefits(t *testing.T) {
	ctx := context.Background()
	const r = 2.0
	o, theta := ridgeOnly(t, r)
	start := make([]float64, len(theta))
	tilt := make([]float64, len(start))
	for i := range tilt {
		tilt[i] = math.Sin(float64(i + 1))
	}
	obj := &Objective{Objective: o, Tilt: tilt}
	base, err := HessianEig(ctx, obj.Objective, start)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range base.vals {
		if math.Abs(v-r) > 1e-12 {
			t.Fatalf("Hessian eigenvalue %d: %g, want %g", i, v, r)
		}
	}
	s := Settings{Start: start, GradScale: 1, MaxIter: 50, Base: base}
	for _, m := range []struct {
		name string
		run  func(context.Context, *Objective, Settings) ([]float64, int, float64, error)
	}{{"Newton", Newton}, {"Root", Root}, {"LBFGS", LBFGS}} {
		theta, iters, gn, err := m.run(ctx, obj, s)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		for i, x := range theta {
			if math.Abs(x-tilt[i]/r) > 1e-8 {
				t.Errorf("%s: theta %v after %d iterations (gradient %g), want tilt/r", m.name, theta, iters, gn)
				break
			}
		}
		if iters == 0 || gn > 1e-8 {
			t.Errorf("%s: %d iterations, gradient norm %g", m.name, iters, gn)
		}
		if start[0] != 0 {
			t.Fatalf("%s modified the start point", m.name)
		}
	}
}
