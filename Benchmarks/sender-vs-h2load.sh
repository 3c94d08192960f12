#!/usr/bin/env bash
# The sender benchmark (issue 4). Two questions:
#  1. How many pushes per second does the reference sender (libcurl multi, one delivery thread)
#     get through to `pushproof serve`, next to h2load driving the same server with the same
#     kind of request (an APNs POST of a poolse ring, ~400 bytes, with a provider-token-sized
#     authorization header) over the same connections and streams? Rounds alternate
#     h2load / sender; the median ratio is printed (goal: sender >= 0.5x h2load).
#  2. What does rule evaluation + payload building cost per push (`send ring --build-only`,
#     a 10,000-member ring built from the rules) next to the delivery rate (goal: >= 10x)?
#
#   Benchmarks/sender-vs-h2load.sh [ROUNDS] [PUSHES_PER_ROUND]
#
# Environment: TLS=1 to measure HTTP/2 over TLS instead of h2c; CONNECTIONS (default 1; with h2c
# Debian's libcurl 7.88 is capped at one connection per host, see the note below), STREAMS (100),
# THREADS (serve's --threads, 1), REPEAT (fan-outs per sender process, median taken; 3),
# SENDERS (the sender's delivery threads, each with its own connections; h2load gets
# SENDERS x CONNECTIONS connections to match; default 1).
#
# Note: with h2c (the default) libcurl < 8.0 cannot reuse a prior-knowledge connection, so the
# sender's Delivery sends the first request with prior knowledge and the rest as plain HTTP/2
# on that one connection: h2c is one connection per host whatever CONNECTIONS says; h2load is
# then also given one. TLS has no such cap.
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-5}"
PUSHES="${2:-20000}"
STREAMS="${STREAMS:-100}"
THREADS="${THREADS:-1}"
REPEAT="${REPEAT:-3}"
TLS="${TLS:-0}"
SENDERS="${SENDERS:-1}"
if [ "$TLS" = 1 ]; then CONNECTIONS="${CONNECTIONS:-1}"; else CONNECTIONS=1; fi
TOTAL_CONNECTIONS=$((SENDERS * CONNECTIONS))
MEMBERS=$((PUSHES + 1))   # a ring reaches every member but the caller: one PushKit push each (--transport apns)

[ -x "$PUSHPROOF" ] || { echo "build it first: swift build -c release --product pushproof" >&2; exit 1; }
command -v h2load >/dev/null || { echo "h2load missing (Debian package nghttp2-client)" >&2; exit 1; }

"$PUSHPROOF" credentials --out "$WORK/cred" >/dev/null
PORT=$(free_port)
SERVE_ARGS=(serve --listen "127.0.0.1:$PORT" --admin off --threads "$THREADS" --cert-out "$WORK/cert.pem" --quiet)
if [ "$TLS" = 1 ]; then SCHEME=https; else SCHEME=http; SERVE_ARGS+=(--h2c); fi
"$PUSHPROOF" "${SERVE_ARGS[@]}" > "$WORK/serve.log" 2>&1 & PIDS+=($!)
wait_for_port "$PORT"
GW="$SCHEME://127.0.0.1:$PORT"

# The same request h2load sends: the sender's ring payload shape, headers and a real JWT.
ring_payload > "$WORK/ring.json"
JWT=$("$PUSHPROOF" token apns --key "$WORK/cred/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456)
TOKEN=7f3c5d1e9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d
HEADERS=(-H "apns-push-type: voip" -H "apns-topic: com.example.loop.voip" -H "apns-priority: 10"
         -H "apns-expiration: 0" -H "authorization: bearer $JWT")
LOAD=(-n "$PUSHES" -c "$TOTAL_CONNECTIONS" -m "$STREAMS" -t 1 -d "$WORK/ring.json" "${HEADERS[@]}")

SENDER=(send ring --members "$MEMBERS" --repeat "$REPEAT" --transport apns --gateway "$GW"
        --senders "$SENDERS" --connections "$CONNECTIONS" --streams "$STREAMS" --max-in-flight "$((STREAMS * CONNECTIONS))"
        --apns-key "$WORK/cred/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456 --json "$WORK/send.json")
if [ "$TLS" = 1 ]; then SENDER+=(--ca "$WORK/cert.pem"); else SENDER+=(--h2c); fi
sender_rate() {
  "$PUSHPROOF" "${SENDER[@]}" > "$WORK/send.log" 2>&1 || { cat "$WORK/send.log" >&2; return 1; }
  python3 - "$WORK/send.json" "$PUSHES" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for r in report["rounds"]:
    if r["outcomes"].get("delivered") != int(sys.argv[2]):
        sys.exit("not every push was delivered: %s" % r["outcomes"])
print("%.0f" % report["median_throughput_per_s"])
PY
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); uptime:$(uptime | sed 's/.*load average/ load average/')"
echo "transport: $([ "$TLS" = 1 ] && echo 'HTTP/2 over TLS' || echo 'h2c (prior knowledge)'), $TOTAL_CONNECTIONS connection(s) ($SENDERS delivery thread(s) x $CONNECTIONS), $STREAMS streams each, serve --threads $THREADS"
echo "h2load -n $PUSHES -c $TOTAL_CONNECTIONS -m $STREAMS -t 1 (APNs POST, ring payload, bearer JWT) $GW/3/device/<token>"
echo "pushproof send ring --members $MEMBERS --transport apns --senders $SENDERS --repeat $REPEAT (median of the repeats)"
echo "(the sender's connections are counted by libcurl: see 'connections opened' in $WORK/send.log)"
echo "round  h2load_req_s  sender_pushes_s  ratio"
ratios=(); rates=()
for round in $(seq 1 "$ROUNDS"); do
  a=$(h2load_rate "${LOAD[@]}" "$GW/3/device/$TOKEN")
  b=$(sender_rate); rates+=("$b")
  r=$(ratio "$b" "$a"); ratios+=("$r")
  printf "%5s  %12s  %15s  %5s\n" "$round" "$a" "$b" "$r"
done
echo "median ratio sender/h2load: $(printf '%s\n' "${ratios[@]}" | median)"

# Rule evaluation + payload building per push, in the same release build.
"$PUSHPROOF" send ring --members 10000 --build-only --repeat 15 --json "$WORK/build.json" | sed 's/^/  /'
BUILT=$(python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["pushes_built_per_s"])' "$WORK/build.json")
DELIVERED=$(printf '%s\n' "${rates[@]}" | median)
echo "pushes built per second (10,000-member ring): $BUILT; delivered per second (median above): $DELIVERED;" \
     "build/deliver: $(ratio "$BUILT" "$DELIVERED")x"
