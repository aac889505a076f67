#!/usr/bin/env bash
# Writes the two small artifacts FuzzLoad starts from (and
# TestSeedArtifacts loads): a fit of the first four sequences of the small
# synthetic example, with the exact solver (steps.rna) and the low-rank one
# (lowrank.rna). Run from the repository root after a change of the
# artifact format (artifact.Version) or of examples/synthetic/model_small.onnx:
#   bash audit/testdata/artifact/make.sh
# steps5.rna and lowrank5.rna are the same fits in format version 5, as
# the audit of that version wrote them (before the options of later
# fits): Load must still read them, so they are kept, not remade.
set -euo pipefail
dir=audit/testdata/artifact
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/audit" ./cmd/audit
head -41 examples/synthetic/train_small.csv >"$tmp/tiny.csv"
"$tmp/audit" fit --model examples/synthetic/model_small.onnx --data "$tmp/tiny.csv" --ridge 10 --save "$dir/steps.rna" --quiet
"$tmp/audit" fit --model examples/synthetic/model_small.onnx --data "$tmp/tiny.csv" --ridge 10 --solver lowrank --save "$dir/lowrank.rna" --quiet
