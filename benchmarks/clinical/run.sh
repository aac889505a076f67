#!/usr/bin/env bash
# The clinical benchmark: exports nlme's Quinidine and Phenobarb (Debian's
# r-cran-nlme: apt-get install r-cran-nlme), trains the GRUs (train.py), builds the audit binary from this tree and audits each model
# with a calibration set (run.py), writing RESULTS.md and results.json; baselines.py trains MQ-RNN and DP-RNN.
# Needs Rscript with nlme, Debian's python3-torch (/usr/bin/python3) and Go.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
if ! Rscript -e 'library(nlme)' >/dev/null 2>&1; then
  echo "benchmarks/clinical: needs R's nlme data sets (apt-get install r-cran-nlme)" >&2; exit 1
fi
Rscript "$here/export.R" "$here/data"
nice -n 10 /usr/bin/python3 "$here/train.py"  # seconds; seeded, so a re-run trains the same models
nice -n 10 /usr/bin/python3 "$here/baselines.py"  # MQ-RNN and DP-RNN with the same GRU, seconds
mkdir -p "$here/runs"
go build -trimpath -o "$here/runs/audit" ./cmd/audit
nice -n 10 /usr/bin/python3 "$here/run.py" --bin "$here/runs/audit"
