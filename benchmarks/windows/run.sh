#!/bin/bash
# Windows benchmark (bench.py says what it measures): trains an LSTM of 3,991
# parameters on the 24-step windows of the four EEG channels matplotlib
# ships, audits it with the windows as independent sequences and with
# --window, and writes RESULTS.md beside this script. A few minutes on two
# cores.
#
#   bash benchmarks/windows/run.sh
# Environment:
#   AUDIT   an rnnaudit binary to use instead of building one from this checkout
#   KEEP    1: reuse the data and trained model of an earlier run
# Needs Go and Debian's python3 with python3-torch, python3-onnx,
# python3-numpy and python-matplotlib-data.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python=/usr/bin/python3
if ! "$python" -c 'import torch, onnx' 2>/dev/null; then
    echo "run.sh: $python needs python3-torch and python3-onnx" >&2
    exit 1
fi
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$root" status --porcelain -- ':!benchmarks/windows' 2>/dev/null)" ]; then
    rev="$rev+changes"
fi
if [ -z "${AUDIT:-}" ]; then
    AUDIT="$(mktemp -d)/audit"
    (cd "$root" && go build -o "$AUDIT" ./cmd/audit)
fi
keep=()
if [ "${KEEP:-}" = 1 ]; then keep=(--keep-data); fi
exec nice -n 10 "$python" "$here/bench.py" --audit "$AUDIT" --rev "$rev" "${keep[@]}"
