#!/usr/bin/env bash
# Accuracy of the scalable (low-rank) path against the exact one:
# on every model small enough for the dense solver, audit once with
# --solver exact and once with --solver lowrank (default rank), write every
# interval as CSV, and compare the limits point by point:
#
#   max and mean |limit difference| / exact interval width, over both limits
#   of every finite interval, and the coverage of each on the test data.
#
# The issue's target: limits within 5% of the width, coverage within 1
# point. Models: the paper's (examples/synthetic, ridge 10, at a minimum)
# and the influence benchmark's zoo (Adam-trained, not at a minimum, an MLP
# head, a packed LSTM with lengths 3 to 10, 100 to 1000 sequences).
#
#   benchmarks/scale/accuracy.sh            # all; writes out/accuracy.md and RESULTS-accuracy.md
#   RANK=40 benchmarks/scale/accuracy.sh    # another rank for lowrank
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/results.sh
results_begin
HERE=benchmarks/scale
OUT=$HERE/out/accuracy
mkdir -p "$OUT"
go build -o "$OUT/audit" ./cmd/audit
Z=benchmarks/influence

cases=(
	"paper|examples/synthetic/model.onnx|examples/synthetic/train.csv|examples/synthetic/test.csv|10"
	"rnn100|$Z/models/rnn100.onnx|$Z/data/synthetic_train_100.csv|$Z/data/synthetic_test.csv|0"
	"rnn100s|$Z/models/rnn100s.onnx|$Z/data/synthetic_train_100.csv|$Z/data/synthetic_test.csv|10"
	"rnn1000|$Z/models/rnn1000.onnx|$Z/data/synthetic_train_1000.csv|$Z/data/synthetic_test.csv|0"
	"gru300|$Z/models/gru300.onnx|$Z/data/synthetic_train_300.csv|$Z/data/synthetic_test.csv|0"
	"lstm300|$Z/models/lstm300.onnx|$Z/data/varlen_train_300.csv|$Z/data/varlen_test.csv|0"
)
rank=()
[ -n "${RANK:-}" ] && rank=(--rank "$RANK")
for c in "${cases[@]}"; do
	IFS='|' read -r name model train test ridge <<<"$c"
	for solver in exact lowrank; do
		extra=()
		[ "$solver" = lowrank ] && extra=("${rank[@]}")
		"$OUT/audit" --model "$model" --data "$train" --test "$test" --ridge "$ridge" \
			--solver "$solver" "${extra[@]}" --quiet --timings \
			--out "$OUT/${name}_$solver.csv" --json "$OUT/${name}_$solver.json"
	done
done
python3 - "$OUT" "${cases[@]}" <<'EOF'
import csv, json, math, sys

out, cases = sys.argv[1], [c.split("|")[0] for c in sys.argv[2:]]

def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))

def num(s):
    return float(s) if s not in ("", None) else math.nan

lines = ["| model | parameters | blocks | rank | max &#124;diff&#124;/width | mean &#124;diff&#124;/width | coverage exact | coverage lowrank | difference (points) | seconds exact / lowrank |",
         "|---|---|---|---|---|---|---|---|---|---|"]
for name in cases:
    ex, lr = rows("%s/%s_exact.csv" % (out, name)), rows("%s/%s_lowrank.csv" % (out, name))
    jx = json.load(open("%s/%s_exact.json" % (out, name)))
    jl = json.load(open("%s/%s_lowrank.json" % (out, name)))
    assert len(ex) == len(lr)
    worst, tot, n = 0.0, 0.0, 0
    for a, b in zip(ex, lr):
        assert (a["id"], a["t"], a["horizon"]) == (b["id"], b["t"], b["horizon"])
        lo1, up1, lo2, up2 = num(a["lower"]), num(a["upper"]), num(b["lower"]), num(b["upper"])
        w = up1 - lo1
        if not all(map(math.isfinite, (lo1, up1, lo2, up2))) or w <= 0:
            continue
        for d in (abs(lo1 - lo2) / w, abs(up1 - up2) / w):
            worst, tot, n = max(worst, d), tot + d, n + 1
    cx, cl = jx["summary"]["coverage"], jl["summary"]["coverage"]
    tx = jx["timings"]["total_seconds"]
    tl = jl["timings"]["total_seconds"]
    lines.append("| %s | %d | %d | %s | %.2f%% | %.2f%% | %.4f | %.4f | %+.2f | %.1f / %.1f |" % (
        name, jx["model"]["parameters"], jx["settings"]["num_blocks"], jl["diagnostics"].get("rank", "?"),
        100 * worst, 100 * tot / max(n, 1), cx, cl, 100 * (cl - cx), tx, tl))
text = "\n".join(lines) + "\n"
open("%s/accuracy.md" % out, "w").write(text)
print(text)
EOF
results_write $HERE/RESULTS-accuracy.md "Accuracy of the low-rank path against the exact one" \
	"${RANK:+RANK=$RANK }benchmarks/scale/accuracy.sh" "" "$OUT/accuracy.md"
