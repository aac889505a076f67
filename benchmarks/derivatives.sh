#!/usr/bin/env bash
# Side-by-side: derivatives of the paper-size model (vanilla RNN, 20 hidden
# units, 481 parameters; 1000 sequences of 10 steps; squared error summed):
# one gradient, one Hessian-vector product, all 1000 per-sequence gradients
# and the dense Hessian, ours (go test -bench in hvp/) against PyTorch
# float64 with 2 threads (torch_derivatives.py). Both time calls after
# one warm-up call (ours: the first per-sequence call also analyses the
# batched program, graph.Program.Examples). The two alternate ROUNDS
# times; medians are reported with our time over PyTorch's.
#
# Writes what it prints to benchmarks/RESULTS-derivatives.md (results.sh).
#
# Needs Debian's python3-torch (/usr/bin/python3). Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/results.sh
ROUNDS=${ROUNDS:-3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
results_begin
run() {
go test -c -o /tmp/hvp.bench ./hvp/ >/dev/null
declare -A go torch
for ((r = 0; r < ROUNDS; r++)); do
	out=$(cd hvp && /tmp/hvp.bench -test.run '^$' -test.bench 'Paper$' -test.benchtime 5x)
	for name in GradientPaper HVPPaper PerSequenceGradientsPaper DenseHessianPaper; do
		ns=$(awk -v n="Benchmark$name" '$1 ~ "^"n"(-[0-9]+)?$" {print $3}' <<<"$out")
		go[$name]+="$ns "
	done
	tout=$(/usr/bin/python3 benchmarks/torch_derivatives.py)
	torch[GradientPaper]+="$(awk '/^torch_grad_ms/ {print $2 * 1e6}' <<<"$tout") "
	torch[HVPPaper]+="$(awk '/^torch_hvp_ms/ {print $2 * 1e6}' <<<"$tout") "
	torch[PerSequenceGradientsPaper]+="$(awk '/^torch_per_seq_grads_s/ {print $2 * 1e9}' <<<"$tout") "
	torch[DenseHessianPaper]+="$(awk '/^torch_hessian_s/ {print $2 * 1e9}' <<<"$tout") "
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf '%-28s %14s %14s %10s\n' measure go_ms torch_ms go/torch
for name in GradientPaper HVPPaper PerSequenceGradientsPaper DenseHessianPaper; do
	g=$(median "${go[$name]}")
	t=$(median "${torch[$name]}")
	awk -v n="$name" -v g="$g" -v t="$t" 'BEGIN {printf "%-28s %14.3f %14.3f %10.4f\n", n, g / 1e6, t / 1e6, g / t}'
done
g=$(median "${go[HVPPaper]}"); gg=$(median "${go[GradientPaper]}")
awk -v h="$g" -v g="$gg" 'BEGIN {printf "go HVP / gradient time: %.2f\n", h / g}'
}
run | tee "$log"
results_write benchmarks/RESULTS-derivatives.md "Derivatives at the paper's scale, against PyTorch" \
	"ROUNDS=$ROUNDS bash benchmarks/derivatives.sh" "$log"
