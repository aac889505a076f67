// Package adaptive is prediction intervals along a time series, over
// plain values: the intervals that adapt along time (ACI, AgACI, NexCP
// and rolling split conformal) and the coverage of any kind of interval
// over time. It knows nothing of models, data sets or the audit's
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
