#!/usr/bin/env bash
# The server benchmark (issue: pushproof serve): h2load drives `pushproof serve --h2c` with
# realistic APNs POSTs (a poolse ring, ~400 bytes), recording and every check on, and in the
# same run nghttpd answering the same requests with a static empty 200: the ceiling for an
# nghttp2 server on this machine. Rounds alternate A B A B; the median ratio is printed.
#
#   Benchmarks/serve-vs-nghttpd.sh [ROUNDS] [REQUESTS]
#
# Environment: THREADS (serve's --threads, default 1 so both servers get one core and h2load
# the other), CONNECTIONS (4), STREAMS (100), SPECS (set to 1 to add --specs Specs, with poolse's
# bundle id set to the benchmark's topic), ADMIN (serve's --admin, default off; the request
# journal exists only with the control API on, so ADMIN=127.0.0.1:0 measures it), SERVE_EXTRA
# (more serve flags, split on spaces, e.g. SERVE_EXTRA="--journal-size 0"), RECORD_DIR (where the
# recording goes, default the benchmark's temporary folder; RECORD_DIR=/dev/shm keeps the disk's
# writeback out of the figures: on a busy disk the kernel's copy into the page cache was 3% to
# 17% of the server's CPU from one run to the next), RECORD (0: no --record at all).
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-5}"
REQUESTS="${2:-200000}"
THREADS="${THREADS:-1}"
CONNECTIONS="${CONNECTIONS:-4}"
STREAMS="${STREAMS:-100}"
TOKEN=$SERVE_TOKEN
ring_payload > "$WORK/ring.json"
HEADERS=("${SERVE_HEADERS[@]}")

mkdir -p "$WORK/htdocs/3/device" && : > "$WORK/htdocs/3/device/$TOKEN"
NGHTTPD_PORT=$(free_port)
nghttpd --no-tls -d "$WORK/htdocs" "$NGHTTPD_PORT" >/dev/null 2>&1 & NGHTTPD_PID=$!; PIDS+=($NGHTTPD_PID)
wait_for_port "$NGHTTPD_PORT"

SERVE_PORT=$(free_port)
RECORD_FILE="${RECORD_DIR:-$WORK}/pushproof-bench-record.$$.jsonl"
trap 'cleanup; rm -f "$RECORD_FILE"' EXIT
SERVE_ARGS=(serve --h2c --listen "127.0.0.1:$SERVE_PORT" --admin "${ADMIN:-off}" --threads "$THREADS")
if [ "${RECORD:-1}" != 0 ]; then SERVE_ARGS+=(--record "$RECORD_FILE"); fi
if [ "${SPECS:-0}" = 1 ]; then
  # The benchmark's topic is com.poolse.app.voip: tell the specs that is poolse's bundle id, so
  # the requests judged are conforming ones (the case to measure), not one violation each.
  echo '{"poolse":{"bundle_ids":["com.poolse.app"]}}' > "$WORK/spec-config.json"
  SERVE_ARGS+=(--specs "$ROOT/Specs" --spec-config "$WORK/spec-config.json")
fi
# shellcheck disable=SC2206  # split on purpose: several flags in one variable
SERVE_ARGS+=(${SERVE_EXTRA:-})
"$PUSHPROOF" "${SERVE_ARGS[@]}" > "$WORK/serve.log" 2>&1 & SERVE_PID=$!; PIDS+=($SERVE_PID)
wait_for_port "$SERVE_PORT"

LOAD=(-n "$REQUESTS" -c "$CONNECTIONS" -m "$STREAMS" -t 1 -d "$WORK/ring.json" "${HEADERS[@]}")
echo "h2load ${LOAD[*]//$WORK/…}"
# Besides req/s, each server's CPU time per request (user+system, from /proc, all its threads):
# on a machine shared with other work the req/s ratio swings with whatever else runs, while
# CPU per request does not; its inverse ratio is the throughput ratio when both are CPU-bound.
cpu_us_per_request() { awk -v t="$1" -v us="$TICK_US" -v n="$REQUESTS" 'BEGIN { printf "%.2f", t * us / n }'; }
echo "round  nghttpd_req_s  pushproof_req_s  ratio  nghttpd_cpu_us/req  pushproof_cpu_us/req  cpu_ratio"
ratios=(); cpu_ratios=()
for round in $(seq 1 "$ROUNDS"); do
  t0=$(cpu_ticks "$NGHTTPD_PID")
  a=$(h2load_rate "${LOAD[@]}" "http://127.0.0.1:$NGHTTPD_PORT/3/device/$TOKEN")
  t1=$(cpu_ticks "$NGHTTPD_PID"); t2=$(cpu_ticks "$SERVE_PID")
  b=$(h2load_rate "${LOAD[@]}" "http://127.0.0.1:$SERVE_PORT/3/device/$TOKEN")
  t3=$(cpu_ticks "$SERVE_PID")
  ca=$(cpu_us_per_request $((t1 - t0))); cb=$(cpu_us_per_request $((t3 - t2)))
  r=$(ratio "$b" "$a"); ratios+=("$r")
  cr=$(ratio "$ca" "$cb"); cpu_ratios+=("$cr")
  printf "%5s  %13s  %15s  %5s  %18s  %20s  %9s\n" "$round" "$a" "$b" "$r" "$ca" "$cb" "$cr"
done
sleep 0.5
if [ "${RECORD:-1}" != 0 ]; then
  lines=$(wc -l < "$RECORD_FILE")
  echo "recorded lines: $lines (expected $((ROUNDS * REQUESTS)) once flushed)"
  if [ "${SPECS:-0}" = 1 ]; then
    echo "verdicts: $(grep -c '"verdict":{"spec":"poolse.ring.apns","ok":true' "$RECORD_FILE" || true) ok of $lines"
  fi
  rm -f "$RECORD_FILE"
fi
echo "median ratio pushproof/nghttpd: $(printf '%s\n' "${ratios[@]}" | median)"
echo "median CPU-per-request ratio nghttpd/pushproof: $(printf '%s\n' "${cpu_ratios[@]}" | median)"
