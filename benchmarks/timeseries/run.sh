#!/bin/bash
# Time-series benchmark (bench.py says what it measures): trains four small
# GRUs (a synthetic regime-switching series, Google's daily log range, an ECG,
# a neuron's membrane potential),
# audits each with every kind of interval and writes RESULTS.md beside this
# script. A few minutes on two cores.
#
#   bash benchmarks/timeseries/run.sh
# Environment:
#   AUDIT   an rnnaudit binary to use instead of building one from this checkout
#   SERIES  a comma-separated subset of regime,goog,ecg,membrane
#   KEEP    1: reuse the data and trained models of an earlier run (bench.py
#           --keep-data), re-running the audits only
# Needs Go and Debian's python3 with python3-torch, python3-onnx, python3-numpy,
# python3-scipy and python-matplotlib-data.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python=/usr/bin/python3
if ! "$python" -c 'import torch, onnx, scipy' 2>/dev/null; then
    echo "run.sh: $python needs python3-torch, python3-onnx and python3-scipy" >&2
    exit 1
fi
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$root" status --porcelain -- ':!benchmarks/timeseries' 2>/dev/null)" ]; then
    rev="$rev+changes"
fi
if [ -z "${AUDIT:-}" ]; then
    AUDIT="$(mktemp -d)/audit"
    (cd "$root" && go build -o "$AUDIT" ./cmd/audit)
fi
keep=()
if [ "${KEEP:-}" = 1 ]; then keep=(--keep-data); fi
exec nice "$python" "$here/bench.py" --audit "$AUDIT" --rev "$rev" --series "${SERIES:-regime,goog,ecg,membrane}" "${keep[@]}"
