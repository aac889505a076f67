#!/usr/bin/env bash
# The trust benchmark: trains the small GRUs (train.py, seconds each),
# builds the audit binary from this tree and audits every model correctly
# and with each usual mistake (run.py), writing RESULTS.md and
# results.json. Needs Debian's python3-torch (/usr/bin/python3) and Go.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
[[ -f "$here/models.json" && -z "${FORCE:-}" ]] || /usr/bin/python3 "$here/train.py"
mkdir -p "$here/runs"
go build -trimpath -o "$here/runs/audit" ./cmd/audit
/usr/bin/python3 "$here/run.py" --bin "$here/runs/audit" ${ONLY:+--only "$ONLY"}
