package datacheck

import (
	"math"
	"testing"
)

// TestUntrainedTensors on hand-worked gradients: five trained tensors
// whose gradient per value is 0.1 to 0.4 (median of the seven 0.3), a
// statistic at 8 (27 times) and one at 7 (23 times), both above 20
// times the median and each carrying more squared gradient (128, 49)
// than the five together (0.89): both named, with the flag that leaves
// them out. One at 5 (17 times) is not named; nor is one at 7 when a
// trained tensor of 400 values at 0.4 (squared gradient 64) carries
// more than it.
func TestUntrainedTensors(t *testing.T) {
	type tensor struct {
		name string
		vals []float64
	}
	run := func(list ...tensor) []Untrained {
		var ts []Tensor
		var grad []float64
		for _, x := range list {
			ts = append(ts, Tensor{Name: x.name, Offset: len(grad), Size: len(x.vals)})
			grad = append(grad, x.vals...)
		}
		return UntrainedTensors(ts, grad, 20)
	}
	trained := []tensor{
		{"w1", []float64{0.1, -0.1, 0.1, -0.1}}, // rms 0.1
		{"w2", []float64{0.2, 0.2}},             // 0.2
		{"b1", []float64{-0.3}},                 // 0.3
		{"b2", []float64{0.2}},                  // 0.2
		{"w3", []float64{0.4, 0.4, -0.4, 0.4}},  // 0.4
	}
	got := run(append(trained, tensor{"mean", []float64{8, -8}}, tensor{"std", []float64{7}})...)
	if len(got) != 2 || got[0].Name != "mean" || got[1].Name != "std" || math.Abs(got[0].RMS-8) > 1e-12 || math.Abs(got[1].Median-0.3) > 1e-12 {
		t.Fatalf("got %+v, want mean (8) and std (7) against the median 0.3", got)
	}
	if f := ExcludeFlag(got); f != "--params '!mean,!std'" {
		t.Errorf("flag %s", f)
	}
	if got := run(trained...); len(got) != 0 {
		t.Errorf("trained tensors named: %+v", got)
	}
	if got := run(append(trained, tensor{"s", []float64{5}})...); len(got) != 0 {
		t.Errorf("a tensor at 17 times the median named: %+v", got)
	}
	big := make([]float64, 400)
	for i := range big {
		big[i] = 0.4
	}
	if got := run(append(trained, tensor{"big", big}, tensor{"s", []float64{7}})...); len(got) != 0 {
		t.Errorf("a tensor carrying less than the others named: %+v", got)
	}
}

// TestFitRidge: theta (1, 2) trained with ridge 0.5, audited with ridge
// 1: the data gradient is -0.5 theta, the total (0.5, 1); the ridge that
// explains it is 0.5, leaving no gradient. A zero theta fits nothing.
func TestFitRidge(t *testing.T) {
	f := &FitCheck{FittedRidge: math.NaN(), FittedGradNorm: math.NaN()}
	f.FitRidge([]float64{1, 2}, []float64{0.5, 1}, 1)
	if math.Abs(f.FittedRidge-0.5) > 1e-15 || math.Abs(f.FittedGradNorm) > 1e-15 {
		t.Errorf("fitted ridge %g, gradient %g; want 0.5 and 0", f.FittedRidge, f.FittedGradNorm)
	}
	z := &FitCheck{FittedRidge: math.NaN(), FittedGradNorm: math.NaN()}
	z.FitRidge([]float64{0, 0}, []float64{0.5, 1}, 1)
	if !math.IsNaN(z.FittedRidge) || !math.IsNaN(z.FittedGradNorm) {
		t.Errorf("zero theta: %g, %g", z.FittedRidge, z.FittedGradNorm)
	}
}
