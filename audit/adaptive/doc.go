// Package adaptive is prediction intervals along a time series, over
// plain values: the intervals that adapt along time (ACI, AgACI, NexCP,
// rolling split conformal, and the kinds that stay finite: ACI clipped,
// quantile tracking and conformal PID) and the coverage of any kind of
// interval over time. It knows nothing of models, data sets or the audit's
// options: package audit gathers the forecasts of each series in time
// order with their base intervals and calls it.
// The method and its conventions are in docs/design.md, section 7
// (coverage over time: section 8.7).
//
// # Time order and labels
//
// A series (Chain) is the forecasts of one sequence and horizon, or of
// every sequence at one horizon when they are pooled, in time order.
// Each forecast's interval is made from what was known before it: the
// labels of earlier forecasts that have arrived (a forecast for horizon
// h made at row r is labelled at row r+h, plus any label delay), taken in
// the order they arrived (Run).
//
// # The methods and their guarantees
//
// The base family of intervals (Options.Base) is split conformal's,
// prediction ± q with the score |y - prediction|, or on the jackknife
// base the jackknife+ interval: recomputed at the working level from the
// forecast's leave-one-block-out sets (Base.Sets) for ACI and AgACI,
// its jackknife+ interval (Forecast.Lower, Upper) scaled about the
// prediction for NexCP and Rolling (package interval's conformalized
// jackknife+ family). The guarantees are the papers' (Guarantee states
// them for a result, Result and Kind hold the figures):
//
//   - ACI (Gibbs and Candès 2021, "Adaptive conformal inference under
//     distribution shift"): the base interval at the working level
//     1 - alpha_t, with alpha_{t+1} = alpha_t + gamma (alpha - err_t);
//     alpha_t <= 0 gives the whole line, alpha_t >= 1 the empty set. For
//     every series of T forecasts and any data, |mean err - alpha| <=
//     (max(alpha_1, 1 - alpha_1) + gamma)/(gamma T) (their Proposition
//     4.1, with alpha_1 = alpha; LongRunBound), when each label is known
//     before the next forecast. With gamma >= 1/(alpha W - 2)
//     (WindowGamma, the default step) every W consecutive forecasts miss
//     at most 2 alpha. There is no guarantee per forecast.
//   - AgACI (Zaffran, Féron, Goude, Josse and Dieuleveut 2022,
//     "Adaptive conformal predictions for time series"): ACI for each
//     gamma of a grid (DefaultGrid), the experts' lower and upper limits
//     aggregated separately by Bernstein online aggregation under the
//     pinball loss at levels alpha/2 and 1 - alpha/2. An expert's
//     unbounded limit enters the aggregation at the widest finite member
//     of the base family, as Zaffran et al. threshold infinite limits.
//     No finite-sample guarantee: each expert has ACI's, the aggregation
//     a regret bound.
//   - NexCP (Barber, Candès, Ramdas and Tibshirani 2023, "Conformal
//     prediction beyond exchangeability"): the base family at the
//     weighted quantile of the series' past scores with weights
//     rho^age. Coverage is at least 1 - alpha minus the weighted total
//     variation between the distributions of the past scores and the new
//     one (their Theorem 2): exact for exchangeable scores, small when
//     the distribution drifts slowly.
//   - Rolling (split conformal on the series' own recent past: Darts'
//     conformal models, and EnbPI without its ensemble): the base family
//     at the conformal quantile of the last Window scores; 1 - alpha
//     when those scores and the next one are exchangeable, nothing under
//     drift.
//   - ACI clipped: ACI's recursion with each unbounded interval replaced
//     by the member at Options.Clip times the largest score seen, so
//     never unbounded. Its guarantee restated: the working level stays in
//     [-g (1 + d + E), 1 + g (1 + d)], E the misses at a level <= 0 and d
//     the most labels pending at a forecast, so |mean err - alpha| <= R
//     (1/g_1 + 1/g_T + sum |1/g_t - 1/g_{t-1}|)/(2T) with R = 1 +
//     g_max (2 + 2d + E): Tally.ClippedSum, Kind.Bound.
//   - Quantile tracking (Angelopoulos, Candès and Tibshirani 2023,
//     "Conformal PID control for time series prediction"): the score's
//     quantile follows q_{t+1} = q_t + eta_t (err_t - alpha), eta_t =
//     Options.Step times the largest recent score. For scores in [0, B]
//     and a constant step, |mean err - alpha| <= (B + eta)/(eta T) on any
//     sequence; for any steps R (1/eta_1 + 1/eta_T + sum |1/eta_t -
//     1/eta_{t-1}|)/(2T) with R = B + 2 eta_max (1 + d) (Angelopoulos,
//     Barber and Bates 2024): Tally.TrackingSum, Kind.Bound. Never
//     unbounded.
//   - Conformal PID (the same paper): quantile tracking plus an error
//     integrator, K_I tan(S log(n+1)/(C_sat (n+1))) in units of the
//     scores' scale and limited to Clip times the largest score seen, plus
//     a scorecaster, on the split base the jackknife+ half-width (the
//     audited model's leave-one-block-out forecast of the score). For
//     bounded scores and an integrator that saturates, |mean err - alpha|
//     <= (c h(T) + 1)/T whatever the scorecaster (their guarantee); the
//     limit makes it saturate for scores up to it. Never unbounded.
//
// Options.Decay makes every online kind's step decay as n^-Decay
// (Angelopoulos, Barber and Bates 2024, "Online conformal prediction
// with decaying step sizes"): the long-run bounds hold with the decaying
// steps, and for exchangeable scores the coverage at each time
// approaches 1 - alpha. A forecast for horizon h learns from labels h
// rows late (Chain.Arrival), as AcMCP does for multi-step errors: the d
// of the bounds above counts the labels pending, and each label still
// unknown when the series ends adds at most 1 to |sum err - alpha|.
//
// # Widths and the recommendation
//
// A kind's widths count every interval (Widths): the unbounded share,
// the median and 90th percentile of the width (an unbounded interval
// infinitely wide), and the interval score with an unbounded interval at
// WidthPenalty. Recommend picks, among the adaptive kinds with no
// unbounded interval whose coverage holds, the one of smallest median
// width: the recommendation is never unbounded.
//
// # Coverage over time
//
// The values of one series are serially dependent, so their coverage is
// judged with an effective sample size: the Newey-West inflation of the
// coverage indicators' variance (DependentTolerance). Over gives rolling
// coverage, pooled and per sequence, the drift between the first and
// last thirds of the test period, and the errors' lag-1
// autocorrelation; Along gives a kind's worst rolling window and the
// series on which it under-covers.
package adaptive
