#!/usr/bin/env bash
# benchmarks/classification, the 3-class sequence task: the audit of a
# GRU sequence classifier trained with CrossEntropyLoss (multiclass.py:
# known true probabilities), jackknife+ sets with LAC, APS and RAPS
# against split conformal on the same model, the probability intervals
# against the truth, and exact re-training of 4 blocks (of that model and
# of the same model carried on to a stationary point, multiclass_polished.onnx). Run from the
# repository root:  bash benchmarks/classification/run_multiclass.sh
# (RETRAIN=0 skips the exact re-training comparison, the slow part.)
# Writes benchmarks/classification/MULTICLASS.md.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
. benchmarks/results.sh
D=benchmarks/classification
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
results_begin
go build -o "$W/audit" ./cmd/audit
nice -n 10 /usr/bin/python3 $D/multiclass.py 2>"$W/train.log"
grep -o 'polished.*' "$W/train.log" >"$W/polished.txt" || true
R=$(sed -n 's/^RIDGE=//p' $D/multiclass_params.txt)
echo "1,000 training sequences of 10 steps, 1,000 test and 300 calibration sequences; a GRU (hidden 6) trained with CrossEntropyLoss and Adam in float32 with early stopping ($(grep -o 'stopped.*' "$W/train.log"))" >"$W/task.txt"
run() { # name, then audit arguments; records the wall seconds
	local name=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	nice -n 10 "$W/audit" "$@" --quiet --out "$W/$name.json"
	t1=$(date +%s.%N)
	echo "$name $(echo "$t1 - $t0" | bc)" >>"$W/times.txt"
}
for score in lac aps raps; do
	run "mc_$score" --model $D/multiclass.onnx --data $D/multiclass_train.csv --test $D/multiclass_test.csv \
		--calibration $D/multiclass_cal.csv --loss softmax-ce --ridge "$R" --set-score $score
done
if [ "${RETRAIN:-1}" != 0 ]; then
	run mc_retrain --model $D/multiclass.onnx --data $D/multiclass_train.csv --test $D/multiclass_test.csv \
		--loss softmax-ce --ridge "$R" --retrain 4 --retrain-budget 4m
	run mc_polished --model $D/multiclass_polished.onnx --data $D/multiclass_train.csv --test $D/multiclass_test.csv \
		--calibration $D/multiclass_cal.csv --loss softmax-ce --ridge "$R" --retrain 4 --retrain-budget 4m
	run mc_retrain_regression --model examples/synthetic/model_small.onnx --data examples/synthetic/train_small.csv \
		--test examples/synthetic/test_small.csv --ridge 10 --retrain 4 --retrain-budget 4m
fi
/usr/bin/python3 $D/analyze_multiclass.py "$W" $D/multiclass_truth.csv >"$W/results.md"
results_write $D/MULTICLASS.md "Classification benchmark: the 3-class sequence task" "bash $D/run_multiclass.sh" "" "$W/results.md"
