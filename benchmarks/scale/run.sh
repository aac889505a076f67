#!/usr/bin/env bash
# Scale benchmark: times `audit` on growing data and models and
# reports, per run, the exit status, wall time, peak memory (GNU time's
# maximum resident set size) and the JSON's per-phase seconds
# (timings.phases). A run that hits its timeout reports the last
# progress line instead (the phase it was in and how far it got).
#
#   benchmarks/scale/run.sh                 # the default set below
#   TIMEOUT=600 benchmarks/scale/run.sh lstm64:10000
#
# Cases are MODEL:NTRAIN[:SOLVER], MODEL one of rnn64, lstm64 (this folder)
# or paper (examples/synthetic/model.onnx, 1000 sequences only). The data
# comes from make.py (run it first: /usr/bin/python3 benchmarks/scale/make.py).
# lstm64 on 100,000 sequences takes minutes even with the low-rank solver
# (Auto's choice above 3000 parameters, whose memory does not grow with
# blocks x parameters): it runs only with ALLOW_HUGE=1.
#
# Writes what it prints to benchmarks/scale/RESULTS-run.md (results.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/results.sh
HERE=benchmarks/scale
TIMEOUT=${TIMEOUT:-300}
OUT=$HERE/out
mkdir -p "$OUT"
if [ ! -x /usr/bin/time ]; then
	echo "installing GNU time (apt-get install time) for peak memory" >&2
	apt-get install -y time >/dev/null
fi
[ -f $HERE/data/train_100000.csv ] || { echo "no data: run /usr/bin/python3 $HERE/make.py" >&2; exit 1; }
go build -o "$OUT/audit" ./cmd/audit

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(paper:1000 rnn64:100 rnn64:100:exact lstm64:1000 lstm64:10000)

results_begin
run() {
for c in "${cases[@]}"; do
	IFS=: read -r model n solver <<<"$c"
	solver=${solver:-auto}
	case $model in
	paper) onnx=examples/synthetic/model.onnx train=examples/synthetic/train.csv test=examples/synthetic/test.csv ;;
	rnn64) onnx=$HERE/rnn64.onnx train=$HERE/data/train_$n.csv test=$HERE/data/test_100.csv ;;
	lstm64) onnx=$HERE/lstm64.onnx train=$HERE/data/train_$n.csv test=$HERE/data/test_1000.csv ;;
	*) echo "unknown model $model" >&2; exit 2 ;;
	esac
	if [ "$model" = lstm64 ] && [ "$n" -ge 100000 ] && [ "${ALLOW_HUGE:-0}" != 1 ]; then
		echo "$c: skipped (several minutes; ALLOW_HUGE=1 to run)"
		continue
	fi
	tag=${model}_${n}_$solver
	rm -f "$OUT/$tag.json"
	set +e
	/usr/bin/time -v -o "$OUT/$tag.time" timeout -s INT "$TIMEOUT" \
		"$OUT/audit" --model "$onnx" --data "$train" --test "$test" --solver "$solver" \
		--json "$OUT/$tag.json" --timings >"$OUT/$tag.stdout" 2>"$OUT/$tag.stderr"
	status=$?
	set -e
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/$tag.time")
	user=$(awk -F': ' '/User time/ {print $2}' "$OUT/$tag.time")
	rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f MB", $2 / 1024}' "$OUT/$tag.time")
	printf '%-22s exit %-3s wall %-9s user %-8s peak %s\n' "$c" "$status" "$wall" "${user}s" "$rss"
	if [ -s "$OUT/$tag.json" ]; then
		python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for p in d["timings"]["phases"]:
    print("    %-32s %8.2f s" % (p["name"], p["seconds"]))' "$OUT/$tag.json"
	else
		echo "    (timed out after ${TIMEOUT}s or failed) last lines:"
		tail -n 3 "$OUT/$tag.stderr" | sed 's/^/    /'
	fi
done
}
run | tee "$OUT/run.log"
results_write $HERE/RESULTS-run.md "Scale benchmark: the latest run" \
	"$(env | grep -E '^(ALLOW_HUGE|TIMEOUT)=' | sort | tr '\n' ' ')benchmarks/scale/run.sh ${cases[*]}" "$OUT/run.log"
