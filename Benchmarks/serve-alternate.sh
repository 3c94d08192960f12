#!/usr/bin/env bash
# Alternates settings of the server benchmark (serve-vs-nghttpd.sh) and prints, for each, the
# medians over all its rounds: pushproof's and nghttpd's CPU per request (µs), their CPU ratio
# (nghttpd/pushproof, taken per round) and req/s ratio. On a noisy machine only settings run
# in turn, many times, compare (issue 13: a run of three rounds moved by up to 30%).
#
#   Benchmarks/serve-alternate.sh RUNS ROUNDS SETTING [SETTING...]
#
# Each SETTING is a list of VAR=value words for serve-vs-nghttpd.sh, e.g.
#   Benchmarks/serve-alternate.sh 6 5 PUSHPROOF=/tmp/before PUSHPROOF=/tmp/after
#   Benchmarks/serve-alternate.sh 3 5 "SPECS=0" "SPECS=1"
#   RECORD_DIR=/dev/shm Benchmarks/serve-alternate.sh 3 5 "RECORD=1" "RECORD=0"
# REQUESTS (default 100000) is each round's request count.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
RUNS="${1:?runs}"; ROUNDS="${2:?rounds per run}"; shift 2
[ "$#" -ge 1 ] || { echo "usage: $0 RUNS ROUNDS SETTING [SETTING...]" >&2; exit 2; }
REQUESTS="${REQUESTS:-100000}"
RESULTS="$(mktemp -d /tmp/pushproof-alternate.XXXXXX)"
trap 'rm -rf "$RESULTS"' EXIT
for run in $(seq 1 "$RUNS"); do
  index=0
  for setting in "$@"; do
    index=$((index + 1))
    # shellcheck disable=SC2086  # a setting is several VAR=value words on purpose
    env $setting "$HERE/serve-vs-nghttpd.sh" "$ROUNDS" "$REQUESTS" > "$RESULTS/run-$run-$index.txt" 2>&1
    # A round's line: round, nghttpd req/s, pushproof req/s, ratio, nghttpd CPU, pushproof CPU, CPU ratio.
    awk '/^ +[0-9]+ +[0-9.]+ +[0-9.]+ /{print $4, $5, $6, $7}' "$RESULTS/run-$run-$index.txt" >> "$RESULTS/setting-$index.txt"
  done
done
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
index=0
for setting in "$@"; do
  index=$((index + 1))
  rows="$RESULTS/setting-$index.txt"
  printf '%s\n  rounds %s  pushproof CPU µs/req %s  nghttpd CPU µs/req %s  CPU ratio %s  req/s ratio %s\n' "$setting" \
    "$(wc -l < "$rows")" "$(awk '{print $3}' "$rows" | median)" "$(awk '{print $2}' "$rows" | median)" \
    "$(awk '{print $4}' "$rows" | median)" "$(awk '{print $1}' "$rows" | median)"
done
