#!/bin/bash
# Solver benchmark (bench.py says what it measures): one audit per solver
# (exact, dual, lowrank, auto) on the bundled examples, the PyTorch
# quickstart's GRU and the windowed LSTM of benchmarks/windows, and
# RESULTS.md beside this script. Tens of minutes on two cores (the exact
# solver on the LSTM is stopped after TIMEOUT seconds).
#
#   bash benchmarks/solver/run.sh
# Environment:
#   AUDIT     an rnnaudit binary to use instead of building one from this checkout
#   QS        the quickstart's output folder (default: run quickstart.py into a scratch folder)
#   QS_RIDGE  the --ridge the quickstart printed (default 2.48718, its seed's)
#   WINDOWS   benchmarks/windows/data of an earlier `bash benchmarks/windows/run.sh` (default that folder)
#   TIMEOUT   seconds after which an audit is stopped (default 300)
#   SKIP      case:solver pairs not to run but to take from PRIOR (comma-separated), e.g.
#             "windowed LSTM 1824 windows:dual": runs of many minutes measured before
#   PRIOR     the results JSON those rows come from (default a copy of results.json as it was)
#   REPEAT    rounds over the solvers for the small cases (bundled examples, quickstart; default 5)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python=/usr/bin/python3
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -z "${AUDIT:-}" ]; then
    AUDIT="$(mktemp -d)/audit"
    (cd "$root" && go build -o "$AUDIT" ./cmd/audit)
fi
QS="${QS:-}"
if [ -z "$QS" ]; then
    QS="$(mktemp -d)"
    nice -n 10 "$python" "$root/examples/pytorch-quickstart/quickstart.py" --bin "$AUDIT" --outdir "$QS" >/dev/null
fi
WINDOWS="${WINDOWS:-$root/benchmarks/windows/data}"
PRIOR="${PRIOR:-}"
if [ -z "$PRIOR" ] && [ -e "$here/results.json" ]; then
    PRIOR="$(mktemp)"
    cp "$here/results.json" "$PRIOR"
fi
nice -n 10 "$python" "$here/bench.py" --audit "$AUDIT" --quickstart "$QS" --quickstart-ridge "${QS_RIDGE:-2.48718}" \
    --windows "$WINDOWS" --windows-subset --timeout "${TIMEOUT:-300}" --json "$here/results.json" \
    --skip "${SKIP:-}" ${PRIOR:+--prior "$PRIOR"} --repeat "${REPEAT:-5}"
"$python" "$here/bench.py" --table "$here/results.json" --rev "$rev" --quickstart "$QS" --windows "$WINDOWS"
