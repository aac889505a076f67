// Package reports renders an audit.Result as an HTML page, a Markdown page
// with SVG charts, a JSON document or a few lines of text (docs/design.md,
// section 11: nothing below this package knows about reports).
//
// WriteFile writes one report in the format its file name asks for
// (FormatOf); WriteHTML, WriteMarkdown, WriteJSON and WriteSummary write to
// an io.Writer. The reports lead with a plain-language headline ("90%
// intervals covered 89.3% of 10,000 test values; flagged ‘below 4’ with
// 81.0% precision") and a verdict on the coverage, then give the tables
// and charts: coverage and interval width per step against the 1-alpha
// and 1-2alpha lines, the calibration curve, fan charts of a few
// sequences with the thresholds and flagged steps, the influence
// diagnostics and the re-training comparison.
//
// # Safety
//
// Every string that comes from the model or the data (file names,
// sequence ids, column and tensor names, block labels) is escaped: by
// html/template in HTML, by entities and backslashes in Markdown (so that
// no renderer passes markup through), by gonum/plot's SVG backend in chart
// text. The HTML page is self-contained: no scripts, no external
// resources; the charts are inline SVG.
//
// # JSON format
//
// WriteJSON writes one object; the same Result gives the same bytes, and
// since the phase times are left out unless asked for, the same inputs and
// seed give the same bytes. Numbers that are not finite (an unbounded
// limit, a precision when nothing was flagged, a coverage at a step
// without targets) are written as null. Per-step arrays are indexed by row
// of the sequence: index 0 is each sequence's first row (smallest step
// value).
//
//	format          "rnnaudit.report"
//	version         3 (changes when fields change meaning or go, or a new
//	                kind of result is added: 2 typed the warnings and moved
//	                diagnostics.phases to timings, 3 added conformal and
//	                the calibrated limits of the steps)
//	model           path, opset, layout ("batch-first" or "time-first"),
//	                features, horizons, many_to_one, parameters (count),
//	                parameter_tensors (names)
//	settings        alpha, nominal_coverage (1-alpha), guaranteed_coverage
//	                (1-2alpha), blocks, block_length, num_blocks, pooling
//	                ("position", or "rows" after warmup rows), warmup, solver,
//	                solver_reason (why: "chosen", "fewer-terms",
//	                "small-model", "large-model" or "predicted-faster"),
//	                solver_prediction (the cost model's predicted time and
//	                memory of each solver, when it mattered), loss_terms (N, the
//	                training loss terms), estimator, curvature, damping, loss, ridge, seed, train_file,
//	                test_file, train_sequences, test_sequences, self_audit,
//	                low and high (thresholds or null), columns {id, time,
//	                target, features, shift}, notes
//	summary         null without targets in the evaluated data, else:
//	  coverage              fraction of labelled values inside their interval
//	  coverage_per_step     the same per row
//	  points_per_step       labelled values per row
//	  joint_coverage        fraction of sequences with every value covered
//	  mean_length           mean upper-lower over the finite intervals
//	  length_per_step       the same per row
//	  infinite_intervals    how many intervals are unbounded
//	  points                labelled values evaluated
//	  rmse                  root mean squared error of the predictions
//	  rmse_per_step         the same per row
//	  interval_score        Winkler score at alpha
//	  alpha, nominal_coverage, guaranteed_coverage
//	  audit.low, audit.high null when not asked for, else {threshold,
//	                        precision, recall, flagged, true_positives,
//	                        actual}: a value is flagged when lower < low
//	                        (upper > high); precision = true_positives /
//	                        flagged, recall = true_positives / actual
//	  naive                 {coverage, coverage_per_step, mean_length,
//	                        length_per_step} of the in-sample residual
//	                        intervals, for comparison
//	  length_gap, length_gap_per_step   jackknife+ minus naive width
//	  verdict               {level: good|fair|poor, headline, text}
//	  beyond                null, or {from_row, train_rows, forecasts,
//	                        labelled}: the forecasts at rows (from from_row,
//	                        0-based) that no training sequence reaches
//	                        (train_rows the longest): no leave-one-out
//	                        residual exists there, so their intervals are
//	                        unbounded; every figure of summary leaves them
//	                        out (they stay in sequences)
//	  coverage_per_horizon, length_per_horizon, points_per_horizon
//	                        the same per horizon h (index h), for a model
//	                        with several horizons; absent otherwise
//	calibration     [{alpha, nominal, coverage}] for alpha 0.05 to 0.5
//	diagnostics     gradient_norm, block_gradient_median,
//	                stationarity_ratio, lambda, trace, min_eigenvalue,
//	                max_eigenvalue, max_iterations, max_residual,
//	                influence_norms (one per block), most_influential
//	                [{block, norm, prediction_shift}], warnings
//	                [{code, step, figure, bound, count, ratio, message}]
//	                (version 2; version 1 had sentences only): code is
//	                one of audit's WarningCode values (not-stationary,
//	                indefinite-curvature, step-coverage, ...), step the
//	                row it is about or null, figure what was measured and
//	                bound the threshold it crossed (their meaning per code
//	                is documented at audit.WarningCode), message the
//	                sentence the reports show; with the lowrank solver
//	                also rank, curvature_products, curvature_sequences,
//	                leverage_estimate, leverage_rule ("in-sample" or
//	                "per-block"), refined_blocks, refine_skipped and
//	                refine_products (each absent when zero)
//	  fit                   the column and ridge check (datacheck.FitCheck): {sequences,
//	                        rmse (training RMSE with the columns as given,
//	                        to compare with the training log), alternatives
//	                        [{flags, features, shift, rmse}] (the features
//	                        in another order, the target shifted by one row
//	                        more or less; features null when as given),
//	                        ridge, gradient_norm (|grad L| with it),
//	                        fitted_ridge (the ridge >= 0 minimising
//	                        |grad L_data + R theta|), fitted_gradient_norm};
//	                        the last three null on the lowrank path
//	  damping_sensitivity   null unless asked for (the command always
//	                        asks), else {computed, reason (why not),
//	                        rho, mean_length, low, high: {rho, mean_length,
//	                        coverage, infinite_intervals} at rho/10 and
//	                        rho*10 (null when not computed), width_share
//	                        (the larger |mean_length move| / mean_length),
//	                        bound (audit.DampingShare)}
//	retrain         present with --retrain: blocks, converged, outcomes
//	                per block ("converged", "not converged": ran and
//	                stopped at the iteration cap or the budget, "not run
//	                (budget)": never started, 0 iterations), not_converged
//	                and not_run (their counts), full_refit_iterations,
//	                full_refit_gradient_norm, tilted (the full re-fit did
//	                not converge: block re-fits minimised their loss minus
//	                the full gradient at theta_hat), warm (no full re-fit
//	                was run: the tilted block re-fits were warm-started
//	                from theta_hat, --retrain-start), cosine, mean_cosine,
//	                min_cosine, norm_ratio, prediction_change_correlation,
//	                exact_coverage, influence_coverage, exact_mean_length,
//	                influence_mean_length, iterations, final_gradient_norm
//	timings         present only with Options.Timings (audit --timings):
//	                phases [{name, seconds}], total_seconds; the wall
//	                times, the one part that differs between runs
//	conformal       null without a calibration set (--calibration), else:
//	  file, sequences, values   the calibration file, its sequences and
//	                        labelled values
//	  forecasts             [{row, horizon, m, half_width, scale,
//	                        jackknife_coverage}] per forecast: m calibration
//	                        values, the split-conformal half-width (the
//	                        ceil((1-alpha)(m+1))-th smallest |residual|, null
//	                        when that exceeds m), the conformalized jackknife+
//	                        scale s (null likewise), and the share of
//	                        calibration values inside their unscaled
//	                        jackknife+ interval
//	  kinds                 [{kind, coverage, coverage_per_step,
//	                        joint_coverage, mean_length, length_per_step,
//	                        infinite_intervals, interval_score, audit,
//	                        coverage_holds}] on the labelled test values (empty
//	                        without them), kind one of jackknife_plus,
//	                        conformal_jackknife_plus, split_conformal,
//	                        split_conformal_bonferroni, in_sample; audit as in
//	                        summary; coverage_holds: pooled coverage within
//	                        sampling error of 1-alpha (two standard errors) and
//	                        no step with 20 or more values below it by more than
//	                        three (for the calibrated kinds counting the
//	                        calibration set's sampling too); for the Bonferroni
//	                        kind, joint coverage within two standard errors
//	  recommendation        null without test targets, else {kind, text}: the
//	                        narrowest (fewest unbounded, then smallest mean
//	                        width) of jackknife_plus, conformal_jackknife_plus
//	                        and split_conformal whose coverage holds; kind null
//	                        when none does
//	  notes                 where calibration values are too few
//	verdict         the audit's judgement (audit.Verdict), also without
//	                targets: {level: good|fair|poor|none, text, reasons
//	                [{code, level, figure, bound, count, ratio, text}]};
//	                code is one of audit's ReasonCode values
//	                (coverage-at-target, steps-below-bound,
//	                wrong-columns, damping-sensitive, beyond-training,
//	                ...; the meaning of the figures per code is
//	                documented there), level the level it allows (the
//	                verdict's is the worst), text the sentence shown
//	adaptive        present only with the adaptive intervals (audit
//	                --adaptive and its flags; adaptive.Result):
//	  base, pooled, source, window   the base family (split or jackknife),
//	                        one state over all test sequences in step order
//	                        or one per sequence, where ACI and AgACI take
//	                        their scores (calibration, window: the series'
//	                        last window labelled forecasts, past: all
//	                        earlier ones, residuals: on the jackknife base,
//	                        each forecast's leave-one-block-out sets)
//	  gamma, grid, rho, rolling_window   ACI's step, AgACI's steps, NexCP's
//	                        decay, W of the worst window
//	  label_delay           rows after its target's row at which a label is
//	                        known (--label-delay)
//	  chains, longest       the series the states run along, and the most
//	                        labelled forecasts of one
//	  kinds                 [{kind, coverage, worst_window, windows,
//	                        mean_length, infinite_intervals, empty_intervals,
//	                        interval_score, bound, guarantee}] on the labelled
//	                        test values, kind one of aci, agaci, nexcp,
//	                        rolling_conformal, jackknife_plus, in_sample and,
//	                        with a calibration set, split_conformal,
//	                        conformal_jackknife_plus; worst_window the lowest
//	                        coverage of rolling_window consecutive forecasts
//	                        of one series (null when none has that many);
//	                        bound ACI's guaranteed bound on |long-run
//	                        miscoverage - alpha| (null where none holds)
//	  notes                 what limits the figures
//	sequences       [{id, steps: [step...]}] in file order, one step per
//	                forecast, sorted by row then horizon:
//	  t                     the step value from the data
//	  horizon               0 for one output per step; h for the forecast of
//	                        row t+h
//	  prediction            the model's forecast
//	  lower, upper          the jackknife+ interval; null when unbounded,
//	                        with lower_unbounded / upper_unbounded: true
//	  target, covered       present when the value is known
//	  naive_lower, naive_upper  the in-sample residual interval
//	  m                     leave-one-block-out residuals used
//	  split_lower, split_upper, bonferroni_lower, bonferroni_upper,
//	  conformal_jackknife_lower, conformal_jackknife_upper
//	                        with a calibration set only: the split-conformal
//	                        interval, its Bonferroni variant (level alpha / L,
//	                        L the sequence's forecasts whose target row lies in
//	                        it) and the conformalized jackknife+ interval
//	                        [f - s (f - lower), f + s (upper - f)]; null when
//	                        unbounded
//	  normalised_lower, normalised_upper
//	                        with a calibration set and the exact or dual
//	                        solver: normalised split conformal, f ± q s, s the
//	                        spread of the leave-one-block-out predictions
//	  m_calibration         with a calibration set: its values at this forecast
//	  aci_alpha, aci_empty, aci_lower, aci_upper, agaci_lower, agaci_upper,
//	  nexcp_lower, nexcp_upper, rolling_lower, rolling_upper
//	                        with the adaptive intervals only: ACI's working
//	                        level alpha_t and its interval (aci_empty: the
//	                        empty set, alpha_t >= 1, limits at the
//	                        prediction), AgACI's, NexCP's and rolling split
//	                        conformal's; null when unbounded
//	  aci_clipped_alpha, aci_clipped_empty, aci_clipped_lower,
//	  aci_clipped_upper, qt_quantile, qt_empty, qt_lower, qt_upper,
//	  pid_quantile, pid_empty, pid_lower, pid_upper
//	                        with the adaptive intervals only: the kinds that
//	                        stay finite, ACI clipped's working level and
//	                        interval, quantile tracking's and conformal
//	                        PID's quantile and interval (*_empty: the empty
//	                        set, limits at the prediction)
package reports
