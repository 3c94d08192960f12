#!/usr/bin/env bash
# `make bench`: every benchmark once, each against its reference in the same run. Figures and
# method: Benchmarks/README.md. Sizes can be raised through each script's arguments.
set -euo pipefail
cd "$(dirname "$0")"
echo "== server: pushproof serve (recording on) vs nghttpd, h2load"
./serve-vs-nghttpd.sh 5 100000
echo
echo "== server with --specs"
SPECS=1 ./serve-vs-nghttpd.sh 5 100000
echo
echo "== validation cost per request (pushproof check --timing)"
./validate-cost.sh 2000 3
echo
echo "== sender vs h2load; rule evaluation + payload building vs delivery"
./sender-vs-h2load.sh 5
echo
echo "== the sender process's CPU and context switches"
./sender-cpu.sh 3
echo
echo "== hostile clients: every attack of the issue-9 probe, one fresh server each"
./hostile.sh
echo
echo "== a scenario as load: drive --scenario vs send ring, the same 10,000-member fan-out"
./drive-vs-send.sh 3
