#!/bin/bash
# EuStockMarkets (R's datasets, Debian's r-base-core): next-week log volatility
# of DAX, SMI, CAC and FTSE from daily returns, a GRU(8) trained with Adam and
# weight decay on the first 80% of the days, tested on the last 20% (issue 23's
# "one or a few long series"). Audits the four indices as four whole sequences
# and DAX alone with interval blocks (K = 12; residuals pooled across rows by
# default), then the four with the adaptive kinds calibrated on the last 250
# forecasts. About 6 CPU-minutes (the damping sensitivity check is on, as in the CLI).
#
#   bash benchmarks/timeseries/eustock/run.sh [outdir]
# Needs Rscript (r-base-core), Go and Debian's python3 with torch, onnx, pandas.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
Rscript -e "write.csv(as.data.frame(EuStockMarkets), '$out/eu.csv', row.names=FALSE)"
/usr/bin/python3 "$here/make.py" "$out" 2>/dev/null
(cd "$root" && go build -o "$out/audit" ./cmd/audit)
a=("$out/audit" --model "$out/eu.onnx" --blocks interval --block-length 12 --quiet)
"${a[@]}" --data "$out/train.csv" --test "$out/test.csv" --json "$out/four.json"
"${a[@]}" --data "$out/train_dax.csv" --test "$out/test_dax.csv" --json "$out/dax.json"
"${a[@]}" --data "$out/train.csv" --test "$out/test.csv" --adaptive --calibration-from last:250 --json "$out/adaptive.json"
/usr/bin/python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
for name in ("four", "dax"):
    s = json.load(open(os.path.join(out, name + ".json")))["summary"]
    print(name, {k: s.get(k) for k in ("coverage", "mean_length", "infinite_intervals", "points")}, "tolerance", round((s.get("over_time") or {}).get("tolerance") or 0, 4), "effective", round((s.get("over_time") or {}).get("effective_points") or 0))
a = json.load(open(os.path.join(out, "adaptive.json"))).get("adaptive")
for k in a["kinds"]:
    print(k["kind"], round(k["coverage"], 3), k["worst_window"], round(k["mean_length"], 3), k["infinite_intervals"])
PY
