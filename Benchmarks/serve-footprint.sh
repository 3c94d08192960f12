#!/usr/bin/env bash
# What one request costs `pushproof serve` in allocations, and its memory after many: the
# benchmark's request (serve-vs-nghttpd.sh, recording on) sent by h2load; mallocs counted with
# a uprobe on libc's malloc (`perf probe`, root) over WARM requests after a warm-up, then the
# process's peak and current RSS (VmHWM, VmRSS) after TOTAL requests.
#
#   Benchmarks/serve-footprint.sh [SERVE FLAGS...]      e.g. --specs Specs --spec-config FILE
#
# Environment: PUSHPROOF (the binary), COUNTED (requests whose mallocs are counted, 10000),
# TOTAL (requests before RSS is read, 1000000; 0 skips it), RECORD_DIR (as serve-vs-nghttpd.sh).
# COUNTED=0 skips the malloc count (a kernel without uprobes: `perf probe` cannot place one).
source "$(dirname "$0")/lib.sh"
COUNTED="${COUNTED:-10000}"; TOTAL="${TOTAL:-1000000}"
start_recording_serve pushproof-footprint "$@"
load() { h2load -n "$1" -c 4 -m 100 -t 1 -d "$WORK/ring.json" "${SERVE_HEADERS[@]}" "$SERVE_URL" | grep -q " $1 succeeded"; }
load 20000
if [ "$COUNTED" != 0 ]; then
  perf probe -q -x "$(ldd "$PUSHPROOF" | awk '/libc.so/{print $3}')" malloc 2>/dev/null || true
  # A fixed window around the counted requests (they take well under a second): the idle
  # process around them allocates nothing.
  perf stat -e probe_libc:malloc -p "$SERVE_PID" -o "$WORK/stat" -- sleep 4 &
  STAT_PID=$!
  sleep 1
  load "$COUNTED"
  wait "$STAT_PID"
  mallocs=$(awk '/probe_libc:malloc/{gsub(",","",$1); print $1}' "$WORK/stat")
  echo "mallocs per request: $(awk -v n="${mallocs:-0}" -v r="$COUNTED" 'BEGIN{printf "%.2f", n / r}') ($mallocs over $COUNTED requests, whole process)"
fi
if [ "$TOTAL" != 0 ]; then
  load "$TOTAL"
  sleep 1
  echo "after $TOTAL more requests: $(grep -E 'VmHWM|VmRSS' "/proc/$SERVE_PID/status" | tr -s ' \t' ' ' | tr '\n' ' ')"
fi
