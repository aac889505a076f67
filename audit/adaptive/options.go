package adaptive

import (
	"fmt"
	"math"
)

// Options configure the intervals that adapt along time. The zero value
// runs the defaults (WithDefaults fills them).
type Options struct {
	// Gamma is ACI's step size; 0 means WindowGamma(alpha,
	// RollingWindow), the smallest step that bounds every window's
	// miscoverage by 2 alpha, or DefaultGamma when no step does (alpha
	// RollingWindow <= 3).
	Gamma float64
	// Grid are AgACI's step sizes; nil means DefaultGrid.
	Grid []float64
	// Rho is NexCP's weight decay per forecast, in (0, 1]; 0 means
	// DefaultRho.
	Rho float64
	// Window takes the base scores from the last Window labelled
	// forecasts of the series (Darts' calibration window): the flag
	// --calibration-from last:N. 0 takes them from the calibration set
	// when there is one and from every earlier labelled forecast of the
	// series otherwise (and Rolling then uses every earlier forecast).
	Window int
	// Base is BaseSplit ("" too) or BaseJackknife.
	Base string
	// Pooled runs one state over all test sequences, in the order of
	// their step values (t): for test sequences that are consecutive
	// windows of one series, or several series observed at the same
	// times. Otherwise each sequence runs its own state.
	Pooled bool
	// RollingWindow is W of the worst rolling-window coverage (the
	// lowest coverage of W consecutive labelled forecasts of a series);
	// 0 means DefaultRollingWindow.
	RollingWindow int
	// LabelDelay is how many rows after its target's row a label becomes
	// known (0: at that row). A target computed from later rows, such as
	// next week's volatility at a daily row, is known only when they
	// are: LabelDelay 5 there. The state takes a label only once it is
	// known, so no forecast is made with a label from its future.
	LabelDelay int
	// Step is the scale-free step of quantile tracking and conformal PID:
	// the step of their quantile is Step times the largest finite score
	// of the series' last RollingWindow labelled forecasts (and of the
	// forecast's calibration scores, when Base.Scores gives them), so
	// that it follows the scale of the scores; 0 means DefaultStep.
	Step float64
	// Integrator is K_I of conformal PID's integrator in units of that
	// same scale; 0 means DefaultIntegrator, a negative value turns the
	// integrator off.
	Integrator float64
	// Saturation is C_sat of the integrator's saturation function; 0
	// means DefaultSaturation.
	Saturation float64
	// NoScorecast leaves conformal PID without its scorecaster (the
	// jackknife+ half-width, on the split base).
	NoScorecast bool
	// Clip is the factor by which the largest finite score seen inflates
	// the finite quantile that replaces an unbounded one (ACI clipped,
	// and the largest integrator term of conformal PID); 0 means
	// DefaultClip.
	Clip float64
	// Decay, in [0, 1), makes the step of every online kind (ACI, ACI
	// clipped, AgACI's experts, quantile tracking, conformal PID) decay
	// as n^-Decay at its n-th label (Angelopoulos, Barber and Bates
	// 2024); 0 keeps constant steps.
	Decay float64
}

// Defaults of Options.
const (
	// DefaultGamma is ACI's step when the rolling window is too short
	// for WindowGamma: Gibbs and Candès's 0.005.
	DefaultGamma = 0.005
	// DefaultRho is NexCP's weight decay, Barber et al.'s choice for
	// drifting data.
	DefaultRho = 0.99
	// DefaultRollingWindow is W of the worst rolling-window coverage
	// (Options.RollingWindow).
	DefaultRollingWindow = 250
	// DefaultStep is quantile tracking's and conformal PID's step as a
	// fraction of the largest recent score: a miss raises the quantile
	// by 0.1 (1 - alpha) of that score, a cover lowers it by 0.1 alpha.
	DefaultStep = 0.1
	// DefaultIntegrator is conformal PID's K_I in units of the same
	// scale as the step.
	DefaultIntegrator = 1.0
	// DefaultSaturation is C_sat of conformal PID's tan saturation (its
	// term reaches the cap when the miscoverage so far exceeds alpha by
	// about pi C_sat / (2 log n) after n labels).
	DefaultSaturation = 1.0
	// DefaultClip inflates the largest finite score seen into the
	// finite quantile that replaces an unbounded one.
	DefaultClip = 1.5
)

// WindowGamma is the smallest ACI step gamma that bounds the miscoverage
// of every w consecutive forecasts of a series by 2 alpha, on any data
// (each label known before the next forecast): with alpha_1 = alpha the
// working level stays in [-gamma, 1 + gamma] (Gibbs and Candès 2021,
// Lemma 4.1), and over forecasts s..s+w-1 the recursion sums to
// w alpha - sum err = (alpha_{s+w} - alpha_s)/gamma, so the window's
// miscoverage is within (1 + 2 gamma)/(gamma w) of alpha: at most alpha
// away when gamma >= 1/(alpha w - 2). It is 0 when alpha w <= 3 (no
// step below 1 does). A larger step adapts faster and has more
// unbounded intervals (alpha_t <= 0).
func WindowGamma(alpha float64, w int) float64 {
	d := alpha*float64(w) - 2
	if !(d > 1) {
		return 0
	}
	return 1 / d
}

// DefaultGrid returns AgACI's default step sizes, Zaffran et al.'s grid
// of 30 (their code, AgACI/Script/acp_gamma.R): 0 (split conformal on
// the base scores, never adapting), 5e-6, 5e-5, then 0.0001 to 0.0009,
// 0.001 to 0.009 and 0.01 to 0.09 in steps of their first value.
func DefaultGrid() []float64 {
	return []float64{0, 0.000005, 0.00005,
		0.0001, 0.0002, 0.0003, 0.0004, 0.0005, 0.0006, 0.0007, 0.0008, 0.0009,
		0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009,
		0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09}
}

// Base families of the adaptive intervals (Options.Base).
const (
	// BaseSplit is split conformal's family, prediction ± q, with the
	// score |y - f|.
	BaseSplit = "split"
	// BaseJackknife is the jackknife+ family: ACI and AgACI take the
	// jackknife+ interval recomputed at their working level (Base.Sets),
	// NexCP and Rolling the jackknife+ interval scaled by q about the
	// prediction (Forecast.Lower, Upper).
	BaseJackknife = "jackknife"
)

// Kinds of adaptive interval, the names under which they are compared
// with the other kinds.
const (
	KindACI     = "aci"
	KindAgACI   = "agaci"
	KindNexCP   = "nexcp"
	KindRolling = "rolling_conformal"
	// KindACIClipped is ACI whose unbounded intervals are replaced by
	// the base family's member at Clip times the largest score seen.
	KindACIClipped = "aci_clipped"
	// KindQuantileTracking is quantile tracking (Angelopoulos, Candès
	// and Tibshirani 2023): online gradient steps on the score's
	// quantile itself.
	KindQuantileTracking = "quantile_tracking"
	// KindPID is conformal PID control (the same paper): quantile
	// tracking plus an error integrator and a scorecaster.
	KindPID = "conformal_pid"
)

// Online are the adaptive kinds, in the order of Result.Kinds: ACI,
// AgACI, NexCP, Rolling, then the kinds that stay finite.
func Online() []string {
	return []string{KindACI, KindAgACI, KindNexCP, KindRolling, KindACIClipped, KindQuantileTracking, KindPID}
}

// WithDefaults checks the options and fills the defaults for the
// miscoverage alpha. Its errors name the option that is out of range.
func (o Options) WithDefaults(alpha float64) (Options, error) {
	if o.Grid == nil {
		o.Grid = DefaultGrid()
	}
	if o.Rho == 0 {
		o.Rho = DefaultRho
	}
	if o.RollingWindow == 0 {
		o.RollingWindow = DefaultRollingWindow
	}
	if o.Gamma == 0 && o.RollingWindow > 0 {
		if o.Gamma = WindowGamma(alpha, o.RollingWindow); o.Gamma == 0 {
			o.Gamma = DefaultGamma
		}
	}
	if o.Base == "" {
		o.Base = BaseSplit
	}
	if o.Step == 0 {
		o.Step = DefaultStep
	}
	if o.Integrator == 0 {
		o.Integrator = DefaultIntegrator
	}
	if o.Integrator < 0 {
		o.Integrator = -1
	}
	if o.Saturation == 0 {
		o.Saturation = DefaultSaturation
	}
	if o.Clip == 0 {
		o.Clip = DefaultClip
	}
	switch {
	case !(o.Gamma > 0 && o.Gamma < 1):
		return o, fmt.Errorf("audit: ACI step size gamma %g must be in (0, 1)", o.Gamma)
	case len(o.Grid) == 0:
		return o, fmt.Errorf("audit: AgACI needs at least one step size")
	case !(o.Rho > 0 && o.Rho <= 1):
		return o, fmt.Errorf("audit: NexCP decay rho %g must be in (0, 1]", o.Rho)
	case o.Window < 0:
		return o, fmt.Errorf("audit: calibration window %d must not be negative", o.Window)
	case o.LabelDelay < 0:
		return o, fmt.Errorf("audit: label delay %d must not be negative", o.LabelDelay)
	case o.RollingWindow < 1:
		return o, fmt.Errorf("audit: rolling window %d must be at least 1", o.RollingWindow)
	case !(o.Step > 0) || math.IsInf(o.Step, 0):
		return o, fmt.Errorf("audit: quantile-tracking step %g must be positive", o.Step)
	case !(o.Saturation > 0) || math.IsInf(o.Saturation, 0):
		return o, fmt.Errorf("audit: PID saturation %g must be positive", o.Saturation)
	case !(o.Clip >= 1) || math.IsInf(o.Clip, 0):
		return o, fmt.Errorf("audit: clip factor %g must be at least 1", o.Clip)
	case !(o.Decay >= 0 && o.Decay < 1):
		return o, fmt.Errorf("audit: step decay %g must be in [0, 1)", o.Decay)
	case o.Base != BaseSplit && o.Base != BaseJackknife:
		return o, fmt.Errorf("audit: unknown adaptive base %q (split or jackknife)", o.Base)
	}
	for _, g := range o.Grid {
		if !(g >= 0 && g < 1) {
			return o, fmt.Errorf("audit: AgACI step size %g must be in [0, 1)", g)
		}
	}
	return o, nil
}
