#!/usr/bin/env bash
# Where a `pushproof run`'s peak RSS is, and of what: the largest RssAnon + RssFile sampled
# every 20 ms from /proc, split into anonymous memory (the heap, stacks: what the run holds)
# and file-backed pages (the binary and the Swift runtime mapped in: the same at any size),
# and at which sample of the run it came. Peak RSS alone (/usr/bin/time -v, run-scenario.sh)
# hides that ~34 MB of it is the same at 10,000 and at 100,000 people.
# Usage: Benchmarks/run-rss.sh SCENARIO [BINARY…]   (default binary: the release build)
# A generated call of another size: sed 's/"people": 10000/"people": 100000/'
#   Benchmarks/scenarios/group-call-10000.json > /tmp/gc100k.json
source "$(dirname "$0")/lib.sh"
SCENARIO="${1:?usage: $0 SCENARIO [BINARY…]}"; shift
BINARIES=("$@"); [ ${#BINARIES[@]} -gt 0 ] || BINARIES=("$PUSHPROOF")
for binary in "${BINARIES[@]}"; do
  "$binary" run "$SCENARIO" --quiet --json "$WORK/run.json" >/dev/null 2>&1 & pid=$!
  peak=0; anon=0; file=0; at=0; samples=0
  while kill -0 "$pid" 2>/dev/null; do
    read -r a f <<< "$(awk '/^RssAnon/{a=$2} /^RssFile/{f=$2} END {print a+0, f+0}' "/proc/$pid/status" 2>/dev/null)"
    samples=$((samples + 1))
    if [ -n "$a" ] && [ $((a + f)) -gt "$peak" ]; then peak=$((a + f)); anon=$a; file=$f; at=$samples; fi
    sleep 0.02
  done
  wait "$pid" || echo "$binary: the run failed" >&2
  awk -v p="$peak" -v a="$anon" -v f="$file" -v at="$at" -v n="$samples" -v b="$binary" \
    'BEGIN { printf "peak RSS %.1f MB (anonymous %.1f, file-backed %.1f) at sample %d of %d  %s\n", p/1024, a/1024, f/1024, at, n, b }'
done
