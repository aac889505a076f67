#!/bin/bash
# EuStockMarkets (R's datasets, Debian's r-base-core): next-week log volatility
# of DAX, SMI, CAC and FTSE from daily returns, a GRU(8) trained with Adam and
# weight decay on the first 80% of the days, tested on the last 20% ("one or a
# few long series"). Audits the four indices as four whole sequences
# and DAX alone with interval blocks (K = 12; residuals pooled across rows by
# default), then the four with the adaptive kinds: on the split base calibrated
# on each index's last 250 forecasts, and on the jackknife base (ACI and AgACI
# recompute the jackknife+ interval at their working level). The target of row
# t is computed from the returns of rows t+1..t+5, so its label is known 5 rows
# later: --label-delay 5 (a run without it shows what feeding labels back too
# early does). report.py writes RESULTS.md beside this script. About 4
# CPU-minutes (the damping sensitivity check, which re-solves every audit twice
# and changes no interval, is off).
#
#   bash benchmarks/timeseries/eustock/run.sh [outdir]
# Environment: AUDIT, an rnnaudit binary to use instead of building one.
# Needs Rscript (r-base-core), Go and Debian's python3 with torch, onnx, pandas.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
rev="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$root" status --porcelain -- ':!benchmarks/timeseries' 2>/dev/null)" ]; then
    rev="$rev+changes"
fi
Rscript -e "write.csv(as.data.frame(EuStockMarkets), '$out/eu.csv', row.names=FALSE)"
/usr/bin/python3 "$here/make.py" "$out" 2>/dev/null
if [ -z "${AUDIT:-}" ]; then
    AUDIT="$out/audit"
    (cd "$root" && go build -o "$AUDIT" ./cmd/audit)
fi
a=(nice "$AUDIT" --model "$out/eu.onnx" --blocks interval --block-length 12 --quiet --damping-sensitivity=false)
ad=("${a[@]}" --data "$out/train.csv" --test "$out/test.csv" --adaptive)
"${a[@]}" --data "$out/train.csv" --test "$out/test.csv" --json "$out/four.json"
"${a[@]}" --data "$out/train_dax.csv" --test "$out/test_dax.csv" --json "$out/dax.json"
"${ad[@]}" --calibration-from last:250 --label-delay 5 --json "$out/adaptive.json"
"${ad[@]}" --adaptive-base jackknife --calibration-from last:250 --label-delay 5 --json "$out/adaptive_jk.json"
"${ad[@]}" --calibration-from last:250 --json "$out/adaptive_nodelay.json"
"${ad[@]}" --calibration-from last:250 --label-delay 5 --aci-gamma 0.005 --json "$out/adaptive_slow.json"
/usr/bin/python3 "$here/report.py" "$out" "$rev" > "$here/RESULTS.md"
cat "$here/RESULTS.md"
