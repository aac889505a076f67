package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
)

// adaptiveFlags are the flags of the intervals that adapt along time
// (adaptive.Options).
type adaptiveFlags struct {
	on              bool
	pooled          bool
	base            string
	gamma           float64
	grid            []float64
	rho             float64
	calibrationFrom string
	rollingWindow   int
	labelDelay      int
	step            float64
	integrator      float64
	saturation      float64
	scorecaster     bool
	clip            float64
	decay           float64
}

// adaptiveFlagNames are the flags that ask for the adaptive intervals.
var adaptiveFlagNames = []string{"adaptive", "adaptive-pooled", "adaptive-base", "aci-gamma", "agaci-grid", "nexcp-rho", "calibration-from", "rolling-window", "label-delay",
	"qt-step", "pid-integrator", "pid-saturation", "pid-scorecaster", "aci-clip", "adaptive-decay"}

// define adds the adaptive flags to fs.
func (a *adaptiveFlags) define(fs *pflag.FlagSet) {
	fs.BoolVar(&a.on, "adaptive", false, "add intervals that adapt along time (ACI, AgACI, NexCP, rolling conformal), for test data that continue the series in time; implied by the flags below")
	fs.BoolVar(&a.pooled, "adaptive-pooled", false, "run one adaptive state over all test sequences in the order of their steps (t), for sequences that are windows of one series (default: one state per sequence)")
	fs.StringVar(&a.base, "adaptive-base", adaptive.BaseSplit, "the base interval of the adaptive kinds: split (prediction ± q) or jackknife (ACI and AgACI: the jackknife+ interval recomputed at their working level; NexCP and rolling: the jackknife+ interval scaled about the prediction)")
	fs.Float64Var(&a.gamma, "aci-gamma", 0, "ACI's step size gamma (default 1/(alpha W - 2) for W of --rolling-window, the smallest step that bounds every window's miscoverage by 2 alpha: 0.0435 at alpha 0.1 and W 250)")
	fs.Float64SliceVar(&a.grid, "agaci-grid", nil, "AgACI's step sizes (default Zaffran et al.'s 30: 0, 5e-6, 5e-5, 0.0001 to 0.0009, 0.001 to 0.009, 0.01 to 0.09)")
	fs.Float64Var(&a.rho, "nexcp-rho", adaptive.DefaultRho, "NexCP's weight decay per forecast, in (0, 1]")
	fs.StringVar(&a.calibrationFrom, "calibration-from", "", "last:N takes the adaptive kinds' calibration scores from the series' own last N labelled forecasts (default: the --calibration set, else every earlier forecast of the series)")
	fs.IntVar(&a.rollingWindow, "rolling-window", adaptive.DefaultRollingWindow, "W of the worst rolling-window coverage (the lowest coverage of W consecutive forecasts of a series)")
	fs.Float64Var(&a.step, "qt-step", adaptive.DefaultStep, "quantile tracking's and conformal PID's step as a fraction of the largest of the last W scores")
	fs.Float64Var(&a.integrator, "pid-integrator", adaptive.DefaultIntegrator, "conformal PID's integrator gain K_I in units of the scores' scale (0: no integrator)")
	fs.Float64Var(&a.saturation, "pid-saturation", adaptive.DefaultSaturation, "C_sat of conformal PID's tan saturation")
	fs.BoolVar(&a.scorecaster, "pid-scorecaster", true, "conformal PID with its scorecaster, the jackknife+ half-width (split base)")
	fs.Float64Var(&a.clip, "aci-clip", adaptive.DefaultClip, "ACI clipped answers this factor times the largest score seen where ACI answers the whole line (and it limits PID's integrator)")
	fs.Float64Var(&a.decay, "adaptive-decay", 0, "every online kind's step decays as n^-E at its n-th label, E in [0, 1) (0: constant steps)")
	fs.IntVar(&a.labelDelay, "label-delay", 0, "rows after its target's row at which a label becomes known (a target computed from the next D rows, such as next week's volatility on daily rows: D); the adaptive state takes each label only then")
}

// options checks the adaptive flags and returns the options (nil when
// no adaptive flag is given); test says that test data will come (--test,
// or audit fit for audit predict), which they need.
func (a *adaptiveFlags) options(fs *pflag.FlagSet, test bool) (*adaptive.Options, error) {
	asked := a.on
	for _, n := range adaptiveFlagNames[1:] {
		asked = asked || fs.Changed(n)
	}
	if !asked {
		return nil, nil
	}
	if !test {
		return nil, usagef("--adaptive (and the flags of the adaptive intervals) need --test (or audit fit, for audit predict): the intervals adapt along the test data as their labels arrive")
	}
	o := &adaptive.Options{Gamma: a.gamma, Grid: a.grid, Rho: a.rho, Pooled: a.pooled, RollingWindow: a.rollingWindow}
	switch strings.ToLower(a.base) {
	case adaptive.BaseSplit, "split-conformal":
		o.Base = adaptive.BaseSplit
	case adaptive.BaseJackknife, "jackknife+", "jackknife-plus":
		o.Base = adaptive.BaseJackknife
	default:
		return nil, usagef("--adaptive-base %q: choose split or jackknife", a.base)
	}
	if fs.Changed("aci-gamma") && !(a.gamma > 0 && a.gamma < 1) {
		return nil, usagef("--aci-gamma %g: must be in (0, 1) (default 1/(alpha W - 2) for W of --rolling-window)", a.gamma)
	}
	if fs.Changed("agaci-grid") && len(a.grid) == 0 {
		return nil, usagef("--agaci-grid: give at least one step size, such as 0.01")
	}
	for _, g := range a.grid {
		if !(g >= 0 && g < 1) {
			return nil, usagef("--agaci-grid: step size %g must be in [0, 1)", g)
		}
	}
	if !(a.rho > 0 && a.rho <= 1) {
		return nil, usagef("--nexcp-rho %g: must be in (0, 1] (default %g)", a.rho, adaptive.DefaultRho)
	}
	if a.labelDelay < 0 {
		return nil, usagef("--label-delay %d: give the number of rows after its target's row at which a label is known (0: at that row)", a.labelDelay)
	}
	o.LabelDelay = a.labelDelay
	switch {
	case !(a.step > 0):
		return nil, usagef("--qt-step %g: must be positive (default %g)", a.step, adaptive.DefaultStep)
	case !(a.integrator >= 0):
		return nil, usagef("--pid-integrator %g: must be at least 0 (0 turns the integrator off)", a.integrator)
	case !(a.saturation > 0):
		return nil, usagef("--pid-saturation %g: must be positive (default %g)", a.saturation, adaptive.DefaultSaturation)
	case !(a.clip >= 1):
		return nil, usagef("--aci-clip %g: must be at least 1 (default %g)", a.clip, adaptive.DefaultClip)
	case !(a.decay >= 0 && a.decay < 1):
		return nil, usagef("--adaptive-decay %g: must be in [0, 1) (0: constant steps)", a.decay)
	}
	o.Step, o.Integrator, o.Saturation, o.Clip, o.Decay, o.NoScorecast = a.step, a.integrator, a.saturation, a.clip, a.decay, !a.scorecaster
	if a.integrator == 0 {
		o.Integrator = -1 // off
	}
	if a.rollingWindow < 1 {
		return nil, usagef("--rolling-window %d: must be at least 1", a.rollingWindow)
	}
	if a.calibrationFrom != "" {
		n, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(a.calibrationFrom)), "last:")
		w, err := strconv.Atoi(n)
		if !ok || err != nil || w < 1 {
			return nil, usagef("--calibration-from %q: give last:N, the number of the series' most recent labelled forecasts to calibrate on (such as last:250)", a.calibrationFrom)
		}
		o.Window = w
	}
	return o, nil
}
