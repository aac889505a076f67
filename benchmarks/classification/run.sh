#!/usr/bin/env bash
# benchmarks/classification: the audit of binary classifiers on a synthetic
# per-step task with known true probabilities (make.py). Run from the
# repository root:  bash benchmarks/classification/run.sh
# (RETRAIN=0 skips the exact re-training comparison, the slow part.)
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
results_write $D/RESULTS.md "Classification benchmark" "bash $D/run.sh" "" "$W/results.md"
