#!/usr/bin/env bash
# Side-by-side at the paper's scale (1000 training and 1000 test sequences
# of 10 steps, the vanilla RNN with 20 hidden units of
# onnx/testdata/pytorch/paper_rnn.onnx, 481 parameters, exact solver), the
# SAME algorithm on both sides: the paper's infinitesimal jackknife with the
# exact Hessian, theta_-i = theta + (H + lambda I)^-1 grad L_i, lambda =
# rho |trace H| / P, one block per training sequence, jackknife+ limits of
# every test point. Ours is BenchmarkAuditPaperInfinitesimal (audit/);
# the reference is torch_audit.py, a batched PyTorch implementation, run
# on the benchmark's own data, model weights and damping (the benchmark
# writes them with RNNAUDIT_BENCH_DUMP), which also checks that both
# compute the same limits: it prints the largest |ours - torch| of the
# lower and upper limits relative to our interval's width
# (torch_audit_limits_maxdiff_over_width).
#
# The two run alternately (G P G P ...), ROUNDS times; medians of the
# totals are reported, with the load average before each round (the
# machine may be shared: PyTorch's threads suffer more from load than
# ours, which inflates the ratio).
#
# For information only, each round also times our default audit
# (BenchmarkAuditPaper: the Newton step on the leave-one-out objective
# with the Gauss-Newton curvature and the leverage correction, see
# docs/design.md, section 4.5). torch_audit.py does not implement it: that line is ours
# alone, not a comparison.
#
# Needs Debian's python3-torch and python3-onnx (/usr/bin/python3). Run on
# a quiet machine.
#
# Writes what it prints to benchmarks/RESULTS-audit.md (results.sh); the
# measurements recorded by hand before it did are in
# benchmarks/RESULTS-audit-history.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/results.sh
ROUNDS=${ROUNDS:-3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
results_begin
run() {
bin=$(mktemp /tmp/audit.bench.XXXXXX)
data=$(mktemp -d /tmp/audit.bench.data.XXXXXX)
trap 'rm -rf "$bin" "$data"' EXIT
go test -c -o "$bin" ./audit/ >/dev/null
model=$PWD/onnx/testdata/pytorch/paper_rnn.onnx
bench() { (cd audit && "$bin" -test.run '^$' -test.bench "^$1\$" -test.benchtime 1x); }
# One untimed run writes the data, damping and our limits for the reference.
RNNAUDIT_BENCH_DUMP=$data bench BenchmarkAuditPaperInfinitesimal >/dev/null
gos=() torchs=() news=() loads=() diffs=()
for ((r = 0; r < ROUNDS; r++)); do
	load=$(awk '{print $1}' /proc/loadavg)
	loads+=("$load")
	echo "round $((r + 1)) (load average $load)"
	out=$(bench BenchmarkAuditPaperInfinitesimal)
	echo "$out" | awk '/^BenchmarkAuditPaperInfinitesimal/ {for (i = 3; i <= NF; i += 2) printf "  go    %-36s %s\n", $(i+1), $i}'
	gos+=("$(echo "$out" | awk '/^BenchmarkAuditPaperInfinitesimal/ {print $3 / 1e9}')")
	tout=$(/usr/bin/python3 benchmarks/torch_audit.py --data "$data" --model "$model")
	echo "$tout" | sed 's/^/  torch /'
	torchs+=("$(echo "$tout" | awk '/^torch_audit_total_s/ {print $2}')")
	diffs+=("$(echo "$tout" | awk '/^torch_audit_limits_maxdiff_over_width/ {print $2}')")
	out=$(bench BenchmarkAuditPaper)
	news+=("$(echo "$out" | awk '/^BenchmarkAuditPaper-/ {print $3 / 1e9}')")
	echo "  go    newton_gn_leverage_total_s (ours only) ${news[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
g=$(median "${gos[@]}")
t=$(median "${torchs[@]}")
n=$(median "${news[@]}")
echo "algorithm: infinitesimal jackknife, exact Hessian, exact solver (both sides)"
echo "load averages before each round: ${loads[*]}"
echo "limits max |go - torch| / width, per round: ${diffs[*]}"
echo "go_infinitesimal_s $g   (rounds: ${gos[*]})"
echo "torch_infinitesimal_s $t   (rounds: ${torchs[*]})"
awk -v g="$g" -v t="$t" 'BEGIN {printf "go_over_torch %.3f  (torch/go = %.1fx)\n", g / t, t / g}'
echo "go_newton_gn_leverage_s $n   (rounds: ${news[*]}; ours only, no PyTorch counterpart)"
}
run | tee "$log"
results_write benchmarks/RESULTS-audit.md "The whole audit at the paper's scale, against PyTorch" \
	"ROUNDS=$ROUNDS bash benchmarks/audit.sh" "$log"
