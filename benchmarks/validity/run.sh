#!/bin/bash
# Validity benchmark: rnnaudit against MQ-RNN, DP-RNN and split conformal
# (CF-RNN) on the paper's synthetic process and ChickWeight; writes
# benchmarks/validity/RESULTS.md and per_step.png (see bench.py).
#
#   bash benchmarks/validity/run.sh            # full run: 3 seeds, n = 100, 300, 1000
#   QUICK=1 bash benchmarks/validity/run.sh    # smoke test: seed 1, n = 100; writes
#                                              # RESULTS-quick.md into the cache folder
# Environment:
#   VALIDITY_CACHE  cache folder (default ${XDG_CACHE_HOME:-~/.cache}/rnnaudit-validity):
#                   one file per (data set, n, seed, method); delete it for a cold run
#   JOBS            training jobs at a time (default 2; each uses one thread)
#   AUDIT           an rnnaudit binary to use instead of building one from this checkout
# Needs Go and Debian's python3 with python3-torch, python3-onnx, python3-numpy,
# python3-matplotlib.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${VALIDITY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnaudit-validity}"
mkdir -p "$cache/bin"
python=/usr/bin/python3
if ! "$python" -c 'import torch, onnx, matplotlib' 2>/dev/null; then
    echo "run.sh: $python needs python3-torch, python3-onnx and python3-matplotlib (apt-get install ...)" >&2
    exit 1
fi
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$root" status --porcelain -- ':!benchmarks/validity' 2>/dev/null)" ]; then
    rev="$rev+changes"
fi
if [ -z "${AUDIT:-}" ]; then
    AUDIT="$cache/bin/audit"
    # -trimpath and no VCS stamp: the binary (and so the audits' cache keys)
    # changes only when the code does.
    (cd "$root" && go build -trimpath -buildvcs=false -o "$AUDIT" ./cmd/audit)
fi
args=(--audit "$AUDIT" --cache "$cache" --jobs "${JOBS:-2}" --rev "$rev")
if [ -n "${QUICK:-}" ] && [ "${QUICK}" != 0 ]; then
    args+=(--quick --out "$cache/RESULTS-quick.md")
else
    args+=(--out "$here/RESULTS.md")
fi
exec "$python" "$here/bench.py" "${args[@]}"
