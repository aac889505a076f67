/*
Audit tells how far to trust a recurrent model. From an ONNX export of a
trained RNN, LSTM or GRU and its training data, it gives every forecast a
confidence interval (the blockwise infinitesimal jackknife+), measures how
well the intervals cover on test data, and writes a report.

Usage:

	audit --model m.onnx --data train.csv [--test test.csv] [--out report.html] [flags]
	audit inspect --model m.onnx [--layout batch-first|time-first]
	audit fit --model m.onnx --data train.csv [--calibration cal.csv] [flags] --save audit.rna
	audit predict --load audit.rna --data new.csv [--model m.onnx] [--out x.csv|x.json|x.html]
	audit serve --load audit.rna [--addr 127.0.0.1:8080] (see audit serve --help)

Without a command, audit runs an audit and prints a short summary. The
inspect command describes a model: its inputs, outputs, layout, operators
and parameters, and runs it once on a small batch (exit status 1 when that
fails).

Fit once, predict many: fit takes the audit's flags without --test and
saves to --save what intervals for new sequences need (the model's
SHA-256 and the --output, --input and --horizons it was loaded with, the
options, every block's step, or with --solver lowrank the factor's basis
and every block's coordinates in it, the leave-one-block-out and
in-sample residuals, the calibration points and their limits, and
unless --restart the training sequences' input rows, from which a new
sequence continuing one runs on from its state; format version 4, see
audit.FormatVersion and docs/artifact.md). predict gives
every forecast of the sequences of --data (labels optional) the intervals
a full audit with --test new.csv would give, without recomputing
curvature or block gradients, and writes the --out reports as the audit
does. It loads the model from the path the fit recorded unless --model is
given, with the output the fit chose, and refuses an artifact of another
format version, another model (SHA-256) or data without the fit's
columns. --retrain is for full audits only.
serve loads a fit once and answers POST /v1/predict with the same intervals
over HTTP (JSON in, JSON out; audit serve --help gives the schema), and
POST /v1/stream for series sent a few rows at a time, whose labels, sent
as they become known, update the adaptive kinds.

Data are CSV files in long format: one row per (sequence, step), with an
id column, a step column, feature columns and a target column, rows in any
order.

Data flags:

	--model PATH        the ONNX model (required)
	--data PATH         the training data the model was fitted to (required)
	--test PATH         test data in the same format; without it the training
	                    data are audited, leaving one sequence out
	--calibration PATH  held-out labelled sequences in the same format (not
	                    used in training, not in the test data, ids distinct
	                    from the training ids): adds split-conformal and
	                    conformalized jackknife+ intervals, whose per-step
	                    coverage 1-A is guaranteed for test sequences
	                    exchangeable with them, and compares every kind of
	                    interval; needs --test
	--adaptive          add intervals that adapt along time as the test labels
	                    arrive (ACI, AgACI, NexCP, rolling split conformal),
	                    for test data that continue the series in time, with
	                    their long-run coverage and worst window of forecasts;
	                    implied by the flags below; needs --test
	--adaptive-pooled   one adaptive state over all test sequences in the
	                    order of their steps (windows of one series; default
	                    one state per sequence)
	--adaptive-base B   split (prediction ± q, default) or jackknife (ACI and
	                    AgACI: the jackknife+ interval recomputed at their
	                    working level; NexCP and rolling: scaled about the
	                    prediction)
	--calibration-from last:N
	                    calibrate the adaptive kinds on the series' own last N
	                    labelled forecasts (default the --calibration scores,
	                    else every earlier forecast of the series)
	--aci-gamma G       ACI's step size (default 1/(alpha W - 2) for W of
	                    --rolling-window, which bounds every window's
	                    miscoverage by 2 alpha: 0.0435 at alpha 0.1, W 250)
	--agaci-grid G1,G2  AgACI's step sizes (default Zaffran et al.'s 30: 0,
	                    5e-6, 5e-5, 0.0001 to 0.0009, 0.001 to 0.009, 0.01
	                    to 0.09)
	--nexcp-rho R       NexCP's weight decay per forecast (default 0.99)
	--rolling-window W  forecasts in the worst rolling-window coverage
	                    (default 250)
	--label-delay D     a label is known D rows after its target's row (a
	                    target computed from the next D rows); the adaptive
	                    state takes it only then (default 0)
	--id-col NAME       the sequence id column (default id)
	--time-col NAME     the step column (default t)
	--target NAME       the target column (default y)
	--features A,B,...  the feature columns, in the order the model takes them
	                    (default every other column)
	--input NAME=A,B    fill model input NAME from these columns, in its order
	                    (repeatable): integer inputs of category codes for
	                    nn.Embedding, such as --input x_cat=store,dow; an
	                    integer input [batch, time] named like a column is
	                    filled from it without the flag
	--output NAME[:K]   the forecast output (default the first; the others
	                    and what only they need are dropped), or column K of
	                    its last axis, such as --output y:0 for the mean of a
	                    head returning cat([mu, logvar], -1)
	--horizons H        the forecast output's last axis holds H horizons
	                    (without it, a last axis of K > 1 values is taken as
	                    K horizons and the summary and report say so)
	--shift N           take the target of row t from row t+N of the sequence
	                    (default 0; 1 for a model that forecasts the next value)
	--layout L          auto, batch-first or time-first (default auto: read
	                    from the model, see audit inspect)

Method flags:

	--alpha A           intervals aim at coverage 1-A and are guaranteed 1-2A,
	                    0 < A < 0.5 (default 0.1)
	--blocks S          what is left out together: sequence, interval or
	                    nested (default sequence)
	--block-length K    steps per interval block (interval and nested blocks)
	--pool P            auto, position or rows: pool leave-one-out residuals across rows
	                    after a warm-up (auto: for interval and nested blocks over few sequences)
	--pool-warmup N     rows kept by position when pooling across rows (0: the block length)
	--restart           start every test sequence at row 0, even one that continues a
	                    training sequence (same id, later steps)
	--solver S          auto, exact, dual, lowrank, cg or lissa (default auto:
	                    dual when the loss terms are no more than the
	                    parameters, else exact up to 3000 parameters,
	                    lowrank above)
	--rank K            rank of the lowrank solver's curvature (default
	                    parameters/4, from 40 to 200)
	--estimator E       how the leave-one-block-out models are estimated:
	                    newton (a Newton step on the leave-block-out loss,
	                    with the block's own leverage) or infinitesimal (the
	                    paper's infinitesimal jackknife) (default newton)
	--newton-steps N    most Newton steps per block: more than 1 iterates
	                    with the exact leave-block-out gradient towards the
	                    leave-block-out optimum (default 20 for interval
	                    and nested blocks of at most 400 loss terms of a
	                    model at a stationary point, else 1)
	--curvature C       gauss-newton or hessian (default gauss-newton)
	--damping RHO       damping relative to the mean eigenvalue (default 1e-3
	                    for gauss-newton, 1e-4 with --ridge, 1e-6 for
	                    hessian)
	--loss L            the training loss: squared-error, or cross-entropy for
	                    outputs that are probabilities (default squared-error)
	--ridge R           the L2 penalty (R/2)|θ|² the model was trained with, in
	                    units of the summed loss: PyTorch weight_decay w with a
	                    loss averaged over N terms gives R = w·N (default 0)
	--params PATTERNS   audit only the parameters whose names match these
	                    comma-separated globs (default all)
	--low X             flag the values whose interval reaches below X, and
	                    report the precision and recall of that flag
	--high X            the same above X
	--retrain N         also re-train N blocks exactly and compare them with the
	                    influence estimates (-1: every block; slow)
	--retrain-budget D  stop re-training after this time, e.g. 2m; re-fits not
	                    finished are reported as not converged (default none)
	--retrain-max-iter N
	                    iteration cap of one re-fit (default 200 Newton or
	                    20000 L-BFGS iterations)
	--retrain-start S   where block re-fits start: full (after a re-fit on all
	                    the data), warm (from the trained parameters, tilted:
	                    for models stopped early) or auto (warm when the model
	                    is not at a stationary point; default)
	--seed N            random seed (default 1)

Output flags:

	--out PATH          write a report; the extension gives the format: .html
	                    (one self-contained page), .md (with the charts in
	                    PATH_files/), .json, or .csv (every interval of
	                    every kind: id, t, horizon, prediction, lower,
	                    upper, target, naive_lower, naive_upper, m,
	                    split_lower, split_upper, bonferroni_lower,
	                    bonferroni_upper, conformal_jackknife_lower,
	                    conformal_jackknife_upper, m_calibration,
	                    recommended, recommended_lower, recommended_upper,
	                    and with --adaptive aci_alpha, aci_lower, aci_upper,
	                    agaci_lower, agaci_upper, nexcp_lower, nexcp_upper,
	                    rolling_lower, rolling_upper;
	                    see README "CSV format"); may be given several times
	--json PATH         also write the JSON result to PATH
	--fan-charts SEL    the sequences drawn as fan charts in HTML and Markdown
	                    reports: auto (default: up to 6, those crossing the
	                    thresholds most first), auto:N, first:N (the first N
	                    of the file), all, none, or sequence ids separated by
	                    commas (an id the evaluated data lack is an error);
	                    audit predict takes it too
	--damping-sensitivity (default true) re-run the solve with the
	                    damping x10 and /10 and report how far the
	                    intervals move; =false skips it
	--timings           add the wall time of each phase to the JSON (as
	                    "timings"); without it the same inputs and seed
	                    give byte-identical JSON
	--quiet             print neither progress nor the summary
	--version           print the version and exit
	--config PATH       read flags from a YAML file whose keys are the flag
	                    names (alpha: 0.05, features: [x1, x2] or x1,x2);
	                    paths in it are relative to the file; flags given
	                    on the command line win

Progress goes to standard error: bars on a terminal; elsewhere (a log
file, a pipe) a status line every 5 seconds while a phase runs, with its
count and the time left when it has one. Ctrl-C stops the audit cleanly
(a second Ctrl-C at once).

Examples:

Audit the bundled synthetic example and write an HTML report:

	audit --model examples/synthetic/model_small.onnx \
	      --data examples/synthetic/train_small.csv \
	      --test examples/synthetic/test_small.csv --ridge 10 --out report.html

(The example model was trained with the penalty ridge/2 |θ|², ridge 10:
--ridge tells the audit so.)

Flag values below 4 and above 10, with 95% intervals, and also write JSON:

	audit --model m.onnx --data train.csv --test test.csv \
	      --alpha 0.05 --low 4 --high 10 --out report.html --json result.json

Calibrate on held-out sequences and compare every kind of interval:

	audit --model m.onnx --data train.csv --test test.csv \
	      --calibration validation.csv --out report.html

Intervals that adapt along time, for test windows that continue one series
(t the absolute time), calibrated on its last 500 forecasts:

	audit --model m.onnx --data train.csv --test later.csv \
	      --adaptive-pooled --calibration-from last:500 --out report.html

Leave out blocks of 5 steps of every sequence, for long sequences:

	audit --model m.onnx --data train.csv --test test.csv \
	      --blocks interval --block-length 5 --out report.md

Name the columns, and check influence against exact re-training of 10 blocks:

	audit --model m.onnx --data visits.csv --test new.csv --id-col patient \
	      --time-col day --target glucose --features dose,meal --retrain 10 \
	      --out report.html

Keep the settings in a file:

	audit --config audit.yaml --out report.html

Exit status: 0 on success, 2 on bad usage (unknown flag, missing or
contradictory options), 130 when interrupted (Ctrl-C), 1 on any other
error.
*/
package main
