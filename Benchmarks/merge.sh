#!/usr/bin/env bash
# What `pushproof merge` costs (issue 22's goal: 64 results of 1,000,000 pushes each merged in
# under 1 s). Writes 64 segment results (each 1,000,000 latencies in one HdrHistogram log and
# 32,000 fan-out completions, from Tests/DriverTests/SegmentMergeBenchmarkFiles.swift), then
# times the release binary's merge over them ROUNDS times: wall and CPU seconds, peak RSS.
#
#   Benchmarks/merge.sh [ROUNDS=3]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS="${1:-3}"
WORK="$(mktemp -d /tmp/pushproof-merge-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
swift build -c release --product pushproof >/dev/null
swift build --build-tests >/dev/null
PUSHPROOF_MERGE_BENCH_DIR="$WORK/results" swift test --skip-build --filter SegmentMergeBenchmarkFiles >/dev/null
echo "results: $(ls "$WORK/results" | wc -l) files, $(du -sh "$WORK/results" | cut -f1)"
for round in $(seq "$ROUNDS"); do
  /usr/bin/time -f "round $round: %e s wall, %U s user + %S s sys, %M KB peak RSS" \
    .build/release/pushproof merge "$WORK"/results/segment-*.json > "$WORK/report.txt" 2> "$WORK/time.txt"
  tail -1 "$WORK/time.txt"
done
grep -m1 "merged 64 segments\|completed" "$WORK/report.txt" || true
