#!/usr/bin/env bash
# Side-by-side: the forward pass of the paper-size model (vanilla RNN, 20
# hidden units, 1 input, linear head, T = 10) on a batch of 1000 sequences,
# our graph (BenchmarkForwardPaper) against PyTorch's float64 forward with
# 2 threads (torch_forward.py). The two alternate ROUNDS times so that both
# see the same machine; medians are reported, then our time over PyTorch's.
#
# Writes what it prints to benchmarks/RESULTS-forward.md (results.sh).
#
# Needs Debian's python3-torch (/usr/bin/python3). Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source benchmarks/results.sh
ROUNDS=${ROUNDS:-5}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
results_begin
run() {
go test -c -o /tmp/graph.bench ./graph/ >/dev/null
gos=() torchs=()
for ((r = 0; r < ROUNDS; r++)); do
	ns=$(cd graph && /tmp/graph.bench -test.run '^$' -test.bench '^BenchmarkForwardPaper$' -test.benchtime 2s -test.benchmem |
		awk '/^BenchmarkForwardPaper/ {print $3; print $5 > "/dev/stderr"; print $7 > "/dev/stderr"}' 2>/tmp/forward.allocs)
	gos+=("$(awk -v ns="$ns" 'BEGIN {printf "%.3f", ns / 1e6}')")
	torchs+=("$(/usr/bin/python3 benchmarks/torch_forward.py | awk '{print $2}')")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
go_ms=$(median "${gos[@]}")
torch_ms=$(median "${torchs[@]}")
echo "go_forward_ms    $go_ms   (rounds: ${gos[*]}; B/op and allocs/op: $(tr '\n' ' ' </tmp/forward.allocs))"
echo "torch_forward_ms $torch_ms   (rounds: ${torchs[*]})"
awk -v g="$go_ms" -v t="$torch_ms" 'BEGIN {printf "go_over_torch    %.3f  (below 1: ours is faster)\n", g / t}'
}
run | tee "$log"
results_write benchmarks/RESULTS-forward.md "Forward pass at the paper's scale, against PyTorch" \
	"ROUNDS=$ROUNDS bash benchmarks/forward.sh" "$log"
