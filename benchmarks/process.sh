#!/usr/bin/env bash
# The audit as the user runs it: whole processes at the paper's scale
# (audit.sh measures in process). Three timings, alternating in each round:
#
#   audit      the `audit` command, end to end (reading the CSVs and the
#              model, the audit, its judgement with the damping
#              sensitivity, the JSON), with the same algorithm and data as
#              torch_audit.py: --solver exact --estimator infinitesimal
#              --curvature hessian at the damping of setting.txt, on the
#              1000 + 1000 sequences that BenchmarkAuditPaperInfinitesimal
#              writes (RNNAUDIT_BENCH_DUMP);
#   torch      the PyTorch reference on them (torch_audit.py);
#   predict1   `audit predict` of one new sequence from the artifact of a
#              fit on examples/synthetic (ridge 10, defaults), against
#   audit1     a whole default audit of that one sequence; PAIRS pairs of
#              the two, alternating, in each round.
#
# Wall seconds of each process; medians over ROUNDS (PAIRS x ROUNDS for
# predict1 and audit1, with their CPU seconds, user + system: on a shared
# machine the wall times of a serial predict and a 2-core audit are
# inflated differently, their CPU times much less), with the load average
# before each round. audit prints its phases' CPU seconds (--timings) so
# the cost of every judgement check is priced. Needs /usr/bin/python3
# with torch and onnx.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/results.sh
ROUNDS=${ROUNDS:-3}
PAIRS=${PAIRS:-3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
results_begin
run() {
tmp=$(mktemp -d /tmp/audit.process.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/audit" ./cmd/audit
go test -c -o "$tmp/bench" ./audit/ >/dev/null
model=$PWD/onnx/testdata/pytorch/paper_rnn.onnx
(cd audit && RNNAUDIT_BENCH_DUMP=$tmp "$tmp/bench" -test.run '^$' -test.bench '^BenchmarkAuditPaperInfinitesimal$' -test.benchtime 1x >/dev/null)
rho=$(awk '$1 == "rho" {print $2}' "$tmp/setting.txt")
S=examples/synthetic
head -11 $S/test.csv >"$tmp/one.csv"
"$tmp/audit" fit --model $S/model.onnx --data $S/train.csv --ridge 10 --save "$tmp/a.rna" --quiet
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
# wallcpu CMD...: "wall cpu" seconds of the process (cpu: user + system).
wallcpu() {
	/usr/bin/python3 -c '
import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
t1 = time.perf_counter(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f %.4f" % (t1 - t0, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime))' "$@"
}
as=() ts=() ps=() os=() pcs=() ocs=() loads=()
for ((r = 0; r < ROUNDS; r++)); do
	load=$(awk '{print $1}' /proc/loadavg)
	loads+=("$load")
	echo "round $((r + 1)) (load average $load)"
	as+=("$(secs "$tmp/audit" --model "$model" --data "$tmp/train.csv" --test "$tmp/test.csv" --solver exact \
		--estimator infinitesimal --curvature hessian --damping "$rho" --timings --quiet --out "$tmp/a.json")")
	echo "  audit    ${as[-1]} s; phases (wall/cpu s): $(/usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['timings']
print(' '.join('%s %.2f/%.2f' % (p['name'].replace(' ', '_'), p['seconds'], p['cpu_seconds']) for p in d['phases']))" "$tmp/a.json")"
	ts+=("$(secs /usr/bin/python3 benchmarks/torch_audit.py --data "$tmp" --model "$model")")
	echo "  torch    ${ts[-1]} s"
	for ((k = 0; k < PAIRS; k++)); do
		read -r w c < <(wallcpu "$tmp/audit" predict --load "$tmp/a.rna" --data "$tmp/one.csv" --quiet --out "$tmp/p.json")
		ps+=("$w") pcs+=("$c")
		read -r w2 c2 < <(wallcpu "$tmp/audit" --model $S/model.onnx --data $S/train.csv --test "$tmp/one.csv" --ridge 10 --quiet --out "$tmp/o.json")
		os+=("$w2") ocs+=("$c2")
		echo "  predict1 $w s (cpu $c s), audit1 $w2 s (cpu $c2 s)"
	done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
a=$(median "${as[@]}") t=$(median "${ts[@]}") p=$(median "${ps[@]}") o=$(median "${os[@]}")
pc=$(median "${pcs[@]}") oc=$(median "${ocs[@]}")
# The same of the predicted points and their limits: the full audit's
# report and predict's agree on every interval (the command lines and
# file names aside).
cmp <(/usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["sequences"]))' "$tmp/p.json") \
	<(/usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["sequences"]))' "$tmp/o.json") >/dev/null &&
	echo "predict1 and audit1 give the same intervals"
echo "load averages before each round: ${loads[*]}"
awk -v a="$a" -v t="$t" 'BEGIN {printf "audit process %.3f s, torch %.3f s: torch/audit = %.1fx\n", a, t, t / a}'
awk -v p="$p" -v o="$o" -v n="${#ps[@]}" 'BEGIN {printf "predict one sequence %.3f s, audit of it %.3f s: %.1fx (wall, medians of %d)\n", p, o, o / p, n}'
awk -v p="$pc" -v o="$oc" 'BEGIN {printf "predict one sequence %.4f s CPU, audit of it %.3f s CPU: %.1fx\n", p, o, o / p}'
}
run | tee "$log"
results_write benchmarks/RESULTS-process.md "The audit as whole processes at the paper's scale" \
	"ROUNDS=$ROUNDS PAIRS=$PAIRS bash benchmarks/process.sh" "$log"
