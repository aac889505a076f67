#!/usr/bin/env bash
# The 1M-sequence local measurement (benchmarks/scale/RESULTS.md):
# audit of lstm64 on data/train_1000000.csv (make.py --million) and
# data/test_1000.csv (make.py), with GNU time's peak memory, the JSON's
# per-phase seconds, and every 30 s the load average and the process's
# resident memory and CPU time (out/1m.load). GOMEMLIMIT defaults to
# 3800MiB: without a limit the collector lets the heap grow to twice the
# live data, about 7 GB here.
#
#   benchmarks/scale/run1m.sh
#
# Writes what it prints, and the W-worker table, to
# benchmarks/scale/RESULTS-1m.md (results.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/results.sh
results_begin
HERE=benchmarks/scale
OUT=$HERE/out
mkdir -p "$OUT"
[ -f $HERE/data/train_1000000.csv ] || { echo "no data: run /usr/bin/python3 $HERE/make.py --million" >&2; exit 1; }
[ -f $HERE/data/test_1000.csv ] || { echo "no data: run /usr/bin/python3 $HERE/make.py" >&2; exit 1; }
go build -o "$OUT/audit" ./cmd/audit
(
	while sleep 30; do
		pid=$(pgrep -f "^$OUT/audit --model" | head -1) || continue
		echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) rss_kb $(awk '/VmRSS/{print $2}' /proc/$pid/status) cpu_s $(awk '{print ($14+$15)/100}' /proc/$pid/stat)"
	done
) >"$OUT/1m.load" 2>&1 &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
set +e
GOMEMLIMIT=${GOMEMLIMIT:-3800MiB} /usr/bin/time -v -o "$OUT/1m.time" \
	"$OUT/audit" --model $HERE/lstm64.onnx --data $HERE/data/train_1000000.csv \
	--test $HERE/data/test_1000.csv --json "$OUT/1m.json" --timings >"$OUT/1m.stdout" 2>"$OUT/1m.stderr"
status=$?
set -e
rm -f "$OUT/1m.workers.md"
report() {
grep -E 'Elapsed|User time|System time|Maximum resident' "$OUT/1m.time"
echo "exit $status"
if [ -s "$OUT/1m.json" ]; then
	/usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for p in d["timings"]["phases"]:
    print("    %-32s %8.2f s" % (p["name"], p["seconds"]))' "$OUT/1m.json"
	# The W-worker table of RESULTS.md from this run's per-phase CPU.
	/usr/bin/python3 $HERE/workers.py --json "$OUT/1m.json" --time "$OUT/1m.time" >"$OUT/1m.workers.md" &&
		echo "W-worker model: $OUT/1m.workers.md"
fi
}
report | tee "$OUT/1m.report"
results_write $HERE/RESULTS-1m.md "A million sequences on one machine" \
	"${GOMEMLIMIT:+GOMEMLIMIT=$GOMEMLIMIT }benchmarks/scale/run1m.sh" "$OUT/1m.report" "$OUT/1m.workers.md"
