#!/usr/bin/env bash
# The influence benchmark, end to end:
#   1. zoo.py   trains the model zoo (cached in models/ and models.json);
#   2. loo.py   from-scratch and warm-started leave-one-out re-training in
#               PyTorch for a few blocks of rnn100 and gru300 (cached in loo.json);
#   3. builds the audit binary from this tree (go build -trimpath, so the
#      same source gives the same bytes and the cached runs are reused);
#   4. run.py   audits every model with every estimator x curvature the
#               binary accepts, writes RESULTS.md and results.json.
# Needs Debian's python3-torch (/usr/bin/python3) and Go. Environment:
#   RETRAIN=N (blocks re-trained per audit, default 40), BUDGET=D (default 3m),
#   TIMEOUT=S (seconds before one audit is stopped, default 1200),
#   ONLY=name,... (models), FORCE=1 (retrain the zoo and loo.json).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
py=/usr/bin/python3
force=()
[[ -n "${FORCE:-}" ]] && force=(--force)
"$py" "$here/zoo.py" "${force[@]}" ${ONLY:+--only "$ONLY"}
"$py" "$here/loo.py" "${force[@]}"
bin="$here/runs/audit"
mkdir -p "$here/runs"
go build -trimpath -o "$bin" ./cmd/audit
"$py" "$here/run.py" --bin "$bin" --retrain "${RETRAIN:-40}" --retrain-budget "${BUDGET:-3m}" --timeout "${TIMEOUT:-1200}" ${ONLY:+--only "$ONLY"}
echo "wrote $here/RESULTS.md and $here/results.json"
