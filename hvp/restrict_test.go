package hvp_test

import (
	"context"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
)

// TestRestrictedParameters: with only some parameters free, the gradient
// and the Hessian-vector product are the corresponding sub-vector and
// sub-block of the full ones.
func TestRestrictedParameters(t *testing.T) {
	ctx := context.Background()
	fx := fixtureByName(t, "lstm_2l_tf")
	full, theta := fixtureObjective(t, fx, hvp.SquaredError, 4)
	g := full.Batches[0].Program.Graph()
	keep, err := graph.ParamPattern("head.*, onnx::MatMul*")
	if err != nil {
		t.Fatal(err)
	}
	rg, err := g.Restrict(keep)
	if err != nil {
		t.Fatal(err)
	}
	if rg.NumParams() >= g.NumParams() || rg.NumParams() == 0 {
		t.Fatalf("restricted to %d of %d parameters", rg.NumParams(), g.NumParams())
	}
	b := full.Batches[0]
	p, err := rg.Compile(b.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	sub := &hvp.Objective{Batches: []hvp.Batch{{Program: p, Inputs: b.Inputs, Target: b.Target, Weight: b.Weight}}}
	// Positions of the kept parameters in the full vector.
	var idx []int
	for _, rp := range rg.Params() {
		for _, fp := range g.Params() {
			if fp.Name == rp.Name {
				for j := 0; j < fp.Size; j++ {
					idx = append(idx, fp.Offset+j)
				}
			}
		}
	}
	gfull := make([]float64, len(theta))
	full.Gradient(ctx, theta, gfull)
	gsub := make([]float64, rg.NumParams())
	rtheta := rg.Theta()
	if _, err := sub.Gradient(ctx, rtheta, gsub); err != nil {
		t.Fatal(err)
	}
	v := make([]float64, len(rtheta))
	vfull := make([]float64, len(theta))
	for i := range v {
		v[i] = float64(i%5) - 2
		vfull[idx[i]] = v[i]
	}
	hsub := make([]float64, len(v))
	hfull := make([]float64, len(theta))
	sub.HVP(ctx, rtheta, v, hsub)
	full.HVP(ctx, theta, vfull, hfull)
	for i, j := range idx {
		if d := gsub[i] - gfull[j]; d*d > 1e-24*(1+gfull[j]*gfull[j]) {
			t.Errorf("gradient[%d] = %g, full gradient[%d] = %g", i, gsub[i], j, gfull[j])
		}
		if d := hsub[i] - hfull[j]; d*d > 1e-22*(1+hfull[j]*hfull[j]) {
			t.Errorf("Hv[%d] = %g, full Hv[%d] = %g", i, hsub[i], j, hfull[j])
		}
	}
	if _, err := g.Restrict(func(string) bool { return false }); err == nil {
		t.Error("restricting to nothing: no error")
	}
}
