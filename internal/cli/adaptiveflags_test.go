package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
)

// TestAdaptiveFlags checks that the adaptive flags reach the options
// and that bad values get one clear usage error naming the flag.
func TestAdaptiveFlags(t *testing.T) {
	base := []string{"--model", "m.onnx", "--data", "train.csv", "--test", "test.csv"}
	p, err := parse(base)
	if err != nil || p.opt.Adaptive != nil {
		t.Fatalf("no adaptive flag: %v, options %+v", err, p.opt.Adaptive)
	}
	p, err = parse(append(slices.Clone(base), "--calibration-from", "last:250", "--aci-gamma", "0.02", "--agaci-grid", "0.01,0.1",
		"--nexcp-rho", "0.95", "--adaptive-pooled", "--adaptive-base", "jackknife", "--rolling-window", "100", "--label-delay", "5"))
	if err != nil {
		t.Fatal(err)
	}
	want := adaptive.Options{Gamma: 0.02, Grid: []float64{0.01, 0.1}, Rho: 0.95, Window: 250, Pooled: true, Base: adaptive.BaseJackknife, RollingWindow: 100, LabelDelay: 5}
	if a := p.opt.Adaptive; a == nil || a.Gamma != want.Gamma || !slices.Equal(a.Grid, want.Grid) || a.Rho != want.Rho || a.Window != want.Window ||
		a.Pooled != want.Pooled || a.Base != want.Base || a.RollingWindow != want.RollingWindow || a.LabelDelay != want.LabelDelay {
		t.Fatalf("options %+v, want %+v", p.opt.Adaptive, want)
	}
	if p, err = parse(append(slices.Clone(base), "--adaptive")); err != nil || p.opt.Adaptive == nil || p.opt.Adaptive.Gamma != 0 {
		t.Fatalf("--adaptive: %v, %+v", err, p.opt.Adaptive)
	}
	if a := p.opt.Adaptive; a.Step != adaptive.DefaultStep || a.Integrator != adaptive.DefaultIntegrator || a.Saturation != adaptive.DefaultSaturation ||
		a.Clip != adaptive.DefaultClip || a.Decay != 0 || a.NoScorecast {
		t.Fatalf("--adaptive: the finite kinds' options %+v, want their defaults", a)
	}
	p, err = parse(append(slices.Clone(base), "--qt-step", "0.2", "--pid-integrator", "0", "--pid-saturation", "2", "--pid-scorecaster=false",
		"--aci-clip", "2.5", "--adaptive-decay", "0.6"))
	if err != nil {
		t.Fatal(err)
	}
	if a := p.opt.Adaptive; a == nil || a.Step != 0.2 || a.Integrator >= 0 || a.Saturation != 2 || !a.NoScorecast || a.Clip != 2.5 || a.Decay != 0.6 {
		t.Fatalf("the finite kinds' flags gave %+v", p.opt.Adaptive)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--calibration-from", "250"}, "--calibration-from \"250\": give last:N"},
		{[]string{"--calibration-from", "last:0"}, "--calibration-from \"last:0\""},
		{[]string{"--aci-gamma", "1.5"}, "--aci-gamma 1.5: must be in (0, 1)"},
		{[]string{"--agaci-grid", "0.1,-0.01"}, "--agaci-grid: step size -0.01 must be in [0, 1)"},
		{[]string{"--nexcp-rho", "0"}, "--nexcp-rho 0: must be in (0, 1]"},
		{[]string{"--adaptive-base", "bootstrap"}, "--adaptive-base \"bootstrap\": choose split or jackknife"},
		{[]string{"--rolling-window", "0"}, "--rolling-window 0: must be at least 1"},
		{[]string{"--label-delay", "-1"}, "--label-delay -1: give the number of rows"},
		{[]string{"--qt-step", "0"}, "--qt-step 0: must be positive"},
		{[]string{"--pid-integrator", "-1"}, "--pid-integrator -1: must be at least 0"},
		{[]string{"--pid-saturation", "0"}, "--pid-saturation 0: must be positive"},
		{[]string{"--aci-clip", "0.5"}, "--aci-clip 0.5: must be at least 1"},
		{[]string{"--adaptive-decay", "1"}, "--adaptive-decay 1: must be in [0, 1)"},
	} {
		_, err := parse(append(slices.Clone(base), c.args...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
	if _, err := parse([]string{"--model", "m.onnx", "--data", "train.csv", "--adaptive"}); err == nil || !strings.Contains(err.Error(), "need --test") {
		t.Errorf("--adaptive without --test: %v", err)
	}
	// audit fit keeps them for audit predict.
	if p, err := parseAs([]string{"--model", "m.onnx", "--data", "train.csv", "--adaptive"}, true); err != nil || p.opt.Adaptive == nil {
		t.Errorf("audit fit --adaptive: %v, %+v", err, p)
	}
}
