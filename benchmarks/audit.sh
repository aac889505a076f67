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
# with the Gauss-Newton curvature and the leverage correction, DESIGN
# section 8). torch_audit.py does not implement it: that line is ours
# alone, not a comparison.
#
# Needs Debian's python3-torch and python3-onnx (/usr/bin/python3). Run on
# a quiet machine.
#
# Results at the final commit of issue 19 (473eee8, 2026-11-24 21:43 UTC,
# the machine otherwise idle; load average 2.0-2.7 before the rounds):
#   Go 0.562, 0.621, 0.527 s; PyTorch 16.90, 18.85, 17.52 s; median 31.2x
#   (per round 30.1x, 30.4x, 33.2x); limits 4.17e-14; Newton-GN+leverage
#   0.97, 0.84, 0.84 s. A second session on the same code (22:03 UTC):
#   Go 0.677, 0.670, 0.587 s; PyTorch 27.26, 18.07, 19.24 s; median 28.7x.
#   PyTorch's time varies 13.5-27.3 s between rounds here: over both
#   sessions 30.6x; two sessions on c535323 gave medians 34.0x and 27.6x
#   (benchmarks/scale/RESULTS.md, "Paper scale, last measurement").
#
# Earlier results (2026-11-24, the shared 2-core machine, never idle during the
# runs; load average before each round):
#   load 16.2, 9.1, 6.5: Go 20.4, 5.03, 2.92 s; PyTorch 264, 158, 274 s;
#     median 52.5x; limits max |go - torch| / width 3.6e-14 every round;
#     Newton-GN+leverage (ours only) 5.02, 5.13, 6.54 s.
#   load 4.4, 7.0, 5.5: Go 2.31, 2.00, 2.13 s; PyTorch 132, 69.9, 87.7 s;
#     median 41.1x (per round 57x, 35x, 41x); limits 3.6e-14;
#     Newton-GN+leverage 3.02, 2.59, 2.98 s.
#   load 2.2, 2.4, 2.4 (the quietest): Go 1.01, 1.07, 1.00 s; PyTorch 16.9,
#     18.8, 20.5 s; median 18.7x; limits 3.6e-14; Newton-GN+leverage 1.51,
#     1.75, 1.25 s. The 30x target is not reached.
# PyTorch's dense Hessian slows far more under load than our audit (17.7 s
# idle for the whole of torch_audit.py), so these ratios overstate the idle
# one. The only idle measurement of the same algorithm, before the exact
# solver stopped computing eigenvectors, was 0.81 s against 17.7 s (22x).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
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
