#!/usr/bin/env bash
# Load test of audit serve on the loopback interface: builds the command,
# fits the small synthetic example (100 training sequences, calibration
# split), starts `audit serve` on a free loopback port, runs the load
# generator (main.go) with 1 and with 20 sequences per request from as many
# clients as the server has slots (the CPUs), then with twice as many
# clients (the excess is shed with 503), and stops the server with SIGTERM.
# Every run is bounded by REQUESTS and DURATION.
#
#   bash benchmarks/serve/run.sh            # REQUESTS=2000 DURATION=60s
#
# Writes what it prints to benchmarks/serve/RESULTS.md (results.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/results.sh
results_begin
REQUESTS=${REQUESTS:-2000}
DURATION=${DURATION:-60s}
CLIENTS=${CLIENTS:-$(nproc)}
tmp=$(mktemp -d)
server=""
cleanup() {
	if [[ -n "$server" ]] && kill -0 "$server" 2>/dev/null; then kill -TERM "$server"; wait "$server" || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/audit" ./cmd/audit
go build -o "$tmp/load" ./benchmarks/serve
ex=examples/synthetic
"$tmp/audit" fit --model $ex/model_small.onnx --data $ex/train_small.csv --calibration $ex/cal_small.csv \
	--ridge 10 --quiet --save "$tmp/a.rna"
"$tmp/audit" serve --load "$tmp/a.rna" --addr 127.0.0.1:0 2>"$tmp/serve.log" &
server=$!
url=""
for _ in $(seq 100); do
	url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/serve.log" | head -1 || true)
	[[ -n "$url" ]] && break
	sleep 0.1
done
[[ -n "$url" ]] || { cat "$tmp/serve.log"; echo "the server did not start" >&2; exit 1; }
measure() {
	echo "# $(nproc) CPUs, $(uname -m), $(go version | cut -d' ' -f3); server $url (--concurrency $(nproc))"
	for run in "$CLIENTS 1" "$CLIENTS 20" "$((2 * CLIENTS)) 1"; do
		set -- $run
		"$tmp/load" --url "$url" --data $ex/test_small.csv --requests "$REQUESTS" --duration "$DURATION" \
			--clients "$1" --sequences "$2"
	done
}
measure | tee "$tmp/out"
kill -TERM "$server"
wait "$server"
server=""
echo "# server log: $(grep -c ' POST /v1/predict ' "$tmp/serve.log") requests logged; last line: $(tail -1 "$tmp/serve.log")" |
	tee -a "$tmp/out"
results_write benchmarks/serve/RESULTS.md "Load test of audit serve" \
	"REQUESTS=$REQUESTS DURATION=$DURATION CLIENTS=$CLIENTS bash benchmarks/serve/run.sh" "$tmp/out"
