#!/usr/bin/env bash
# Large-model benchmark: the default audit of the 794,881-parameter
# 2-layer LSTM-256 (make.py) on NTRAIN training sequences, with GNU time's
# wall time and peak memory, the JSON's per-phase seconds and coverage. A
# run that hits its timeout (SIGINT: the audit stops cleanly) reports the
# last progress line instead.
#
#   nice -n 10 /usr/bin/python3 benchmarks/large/make.py     # data and model first
#   benchmarks/large/run.sh [NTRAIN[:NTEST]] ...             # default 20000:1000
#   TIMEOUT=900 MEMORY=6G FLAGS="--rank 40" benchmarks/large/run.sh 200:100
#
# NTEST is 100 or 1000 (test_100.csv is written from test_1000.csv).
# Writes what it prints to benchmarks/large/RESULTS.md (results.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/results.sh
HERE=benchmarks/large
DATA=$HERE/data
OUT=$HERE/out
TIMEOUT=${TIMEOUT:-900}
mkdir -p "$OUT"
[ -f $DATA/lstm256x2.onnx ] || { echo "no model: run nice -n 10 /usr/bin/python3 $HERE/make.py" >&2; exit 1; }
[ -f $DATA/test_100.csv ] || awk -F, 'NR == 1 || $1 <= 100' $DATA/test_1000.csv >$DATA/test_100.csv
go build -o "$OUT/audit" ./cmd/audit
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(20000:1000)
mem=()
[ -z "${MEMORY:-}" ] || mem=(--memory "$MEMORY")
results_begin
run() {
for c in "${cases[@]}"; do
	IFS=: read -r n nt <<<"$c"
	nt=${nt:-1000}
	tag=lstm256x2_${n}_$nt
	rm -f "$OUT/$tag.json"
	set +e
	# shellcheck disable=SC2086
	/usr/bin/time -v -o "$OUT/$tag.time" timeout -s INT "$TIMEOUT" "$OUT/audit" \
		--model $DATA/lstm256x2.onnx --data $DATA/train_$n.csv --test $DATA/test_$nt.csv \
		"${mem[@]}" ${FLAGS:-} --json "$OUT/$tag.json" --timings >"$OUT/$tag.stdout" 2>"$OUT/$tag.stderr"
	status=$?
	set -e
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/$tag.time")
	cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.0f", s}' "$OUT/$tag.time")
	rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.2f GB", $2 * 1024 / 1e9}' "$OUT/$tag.time")
	printf '%s train, %s test %s: exit %s, wall %s, CPU %ss, peak RSS %s\n' "$n" "$nt" "${MEMORY:+--memory $MEMORY }${FLAGS:-}" "$status" "$wall" "$cpu" "$rss"
	if [ -s "$OUT/$tag.json" ]; then
		python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for p in d["timings"]["phases"]:
    print("    %-32s %8.2f s" % (p["name"], p["seconds"]))
s = d.get("summary") or {}
print("    coverage %s, solver %s" % (s.get("coverage"), d["settings"].get("solver")))' "$OUT/$tag.json"
	else
		echo "    (stopped after ${TIMEOUT}s or failed) last lines:"
		tail -n 2 "$OUT/$tag.stderr" | sed 's/^/    /'
	fi
done
}
run | tee "$OUT/run.log"
results_write $HERE/RESULTS.md "Large-model benchmark: the latest run" \
	"$(env | grep -E '^(TIMEOUT|MEMORY|FLAGS)=' | sort | tr '\n' ' ')benchmarks/large/run.sh ${cases[*]}" "$OUT/run.log"
