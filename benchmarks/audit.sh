#!/usr/bin/env bash
# Side-by-side: the whole audit at the paper's scale (1000 training and
# 1000 test sequences of 10 steps, vanilla RNN with 20 hidden units, exact
# solver), ours (BenchmarkAuditPaper in audit/) against a batched PyTorch
# implementation of the same procedure (torch_audit.py), alternating ROUNDS
# times; medians of the totals and of each phase are reported.
#
# Needs Debian's python3-torch (/usr/bin/python3). Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
go test -c -o /tmp/audit.bench ./audit/ >/dev/null
gos=() torchs=()
for ((r = 0; r < ROUNDS; r++)); do
	out=$(cd audit && /tmp/audit.bench -test.run '^$' -test.bench '^BenchmarkAuditPaper$' -test.benchtime 1x)
	echo "$out" | awk '/^BenchmarkAuditPaper/ {for (i = 3; i <= NF; i += 2) printf "  go    %-36s %s\n", $(i+1), $i}'
	gos+=("$(echo "$out" | awk '/^BenchmarkAuditPaper/ {print $3 / 1e9}')")
	tout=$(/usr/bin/python3 benchmarks/torch_audit.py)
	echo "$tout" | sed 's/^/  torch /'
	torchs+=("$(echo "$tout" | awk '/^torch_audit_total_s/ {print $2}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
g=$(median "${gos[@]}")
t=$(median "${torchs[@]}")
echo "go_audit_s    $g   (rounds: ${gos[*]})"
echo "torch_audit_s $t   (rounds: ${torchs[*]})"
awk -v g="$g" -v t="$t" 'BEGIN {printf "go_over_torch %.3f  (torch/go = %.1fx)\n", g / t, t / g}'
