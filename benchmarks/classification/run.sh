#!/usr/bin/env bash
# benchmarks/classification: the audit of binary classifiers on a synthetic
# per-step task with known true probabilities (make.py), and on real
# longitudinal data, MASS's bacteria (bacteria.csv from bacteria.R;
# bacteria.py trains the models and the baselines: split conformal LAC and
# APS, MC dropout). Run from the repository root:
#   bash benchmarks/classification/run.sh
# (RETRAIN=0 skips the exact re-training comparison, the slow part;
# BACTERIA_REPEATS=N repeats the five folds of the bacteria task N times,
# default 2; 0 skips it; SAMPLING_DATA=N re-trains the synthetic model on
# N fresh training sets, default 8, 0 skips it, to split the probability
# intervals' error into sampling variability and bias: sampling.py.)
# Writes benchmarks/classification/RESULTS.md.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
. benchmarks/results.sh
D=benchmarks/classification
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
results_begin
go build -o "$W/audit" ./cmd/audit
nice -n 10 /usr/bin/python3 $D/make.py 2>/dev/null
R=$(sed -n 's/^RIDGE=//p' $D/params.txt)
run() { # name, then audit arguments; records the wall seconds
	local name=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	nice -n 10 "$W/audit" "$@" --quiet --out "$W/$name.json"
	t1=$(date +%s.%N)
	echo "$name $(echo "$t1 - $t0" | bc)" >>"$W/times.txt"
}
for score in lac aps raps; do
	run "logits_$score" --model $D/binary_logits.onnx --data $D/train.csv --test $D/test.csv --calibration $D/cal.csv \
		--loss bce-logits --ridge "$R" --set-score $score --flag-above 0.7 --flag-below 0.3
done
run prob_lac --model $D/binary_prob.onnx --data $D/train.csv --test $D/test.csv --calibration $D/cal.csv \
	--loss bce --ridge "$R" --flag-above 0.7 --flag-below 0.3
if [ "${RETRAIN:-1}" != 0 ]; then
	run retrain_class --model $D/binary_logits.onnx --data $D/train.csv --test $D/test.csv \
		--loss bce-logits --ridge "$R" --retrain 4 --retrain-budget 4m
	run retrain_regression --model examples/synthetic/model_small.onnx --data examples/synthetic/train_small.csv \
		--test examples/synthetic/test_small.csv --ridge 10 --retrain 4 --retrain-budget 4m
fi
/usr/bin/python3 $D/analyze.py "$W" $D/test_truth.csv >"$W/results.md"
if [ "${SAMPLING_DATA:-8}" != 0 ]; then
	echo >>"$W/results.md"
	nice -n 10 /usr/bin/python3 $D/sampling.py "$W/logits_lac.json" $D/test_truth.csv "${SAMPLING_DATA:-8}" \
		"${SAMPLING_INIT:-2}" >>"$W/results.md"
fi
if [ "${BACTERIA_REPEATS:-2}" != 0 ]; then
	B=$W/bacteria
	mkdir -p "$B"
	: >"$B/times.txt"
	nice -n 10 /usr/bin/python3 $D/bacteria.py "$B" "${BACTERIA_REPEATS:-2}" 2>/dev/null
	for r in "$B"/run[0-9][0-9]; do
		R=$(sed -n 's/^RIDGE=//p' "$r/params.txt")
		for kind in lac aps full_lac; do
			model=$r/model.onnx score=$kind
			if [ $kind = full_lac ]; then model=$r/model_full.onnx score=lac; fi
			t0=$(date +%s.%N)
			nice -n 10 "$W/audit" --model "$model" --data "$r/train.csv" --test "$r/test.csv" --loss bce-logits \
				--ridge "$R" --set-score $score --flag-above 0.7 --flag-below 0.3 --quiet --out "$r/$kind.json"
			t1=$(date +%s.%N)
			echo "$(basename "$r")_$kind $(echo "$t1 - $t0" | bc)" >>"$B/times.txt"
		done
	done
	{
		echo
		echo "## Real data: MASS's bacteria"
		echo
		/usr/bin/python3 $D/bacteria_analyze.py "$B"
	} >>"$W/results.md"
fi
results_write $D/RESULTS.md "Classification benchmark" "bash $D/run.sh" "" "$W/results.md"
