# Shared helpers for the benchmark scripts (sourced, not run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PUSHPROOF="${PUSHPROOF:-$ROOT/.build/release/pushproof}"
WORK="$(mktemp -d /tmp/pushproof-bench.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# A free TCP port on loopback.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits until something accepts on 127.0.0.1:$1.
wait_for_port() {
  for _ in $(seq 1 200); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on port $1" >&2; return 1
}

# h2load's "finished in X, R req/s" rate, and it fails unless every request succeeded.
h2load_rate() {
  local out; out="$(h2load "$@" 2>&1)"
  echo "$out" >> "$WORK/h2load.log"
  local done succeeded
  done=$(echo "$out" | sed -n 's/^requests: .* \([0-9]*\) done, \([0-9]*\) succeeded.*/\1 \2/p')
  if [ -z "$done" ]; then echo "h2load failed: $out" >&2; return 1; fi
  echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p'
}

# A process's CPU time so far (user + system, all its threads), in clock ticks of TICK_US µs.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }

# A poolse ring payload (~400 bytes), as the seed shows it. No newline at its end: a sender's
# JSON encoder writes none, and the record line holds a JSON body with one as a string, not as
# its bytes (README "Recording format"), which is not the case to measure.
ring_payload() {
  printf '%s' "$(cat <<'JSON'
{"cv":"1","type":"call","event":"ring","call_id":"4a69d2c2-8a53-4c53-9f64-6f4bbd0f9f11","conversation_id":"6f1c8e0e-3a0b-4d5e-8a1b-2c3d4e5f6a7b","conversation_name":"Engineering","caller_user_id":"2b7e151628aed2a6abf71589","caller_external_id":"acme-alice","caller_name":"Alice","media":"video","has_video":true,"ring_deadline":1793952045000,"sent_at":1793952000000,"grant":"eyJhbGciOiJIUzI1NiJ9.eyJjYWxsIjoiNGE2OSJ9.c2lnbmF0dXJl"}
JSON
)"
}

# The serve benchmarks' request (serve-vs-nghttpd, -alternate, -footprint, -profile): a poolse
# VoIP ring to one device, with the headers a sender sends.
SERVE_TOKEN=7f3c5d1e9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d
SERVE_HEADERS=(-H "apns-push-type: voip" -H "apns-topic: com.poolse.app.voip" -H "apns-priority: 10"
               -H "apns-expiration: 0" -H "authorization: bearer benchmark" -H "content-type: application/json")

# Writes the request's body to $WORK/ring.json and starts `pushproof serve --h2c --threads 1`
# recording into ${RECORD_DIR:-$WORK}/NAME.PID.jsonl (removed on exit), NAME being $1 and more
# serve flags after it; sets SERVE_PID and SERVE_URL (the request's URL) once it listens.
start_recording_serve() {
  local name="$1"; shift
  ring_payload > "$WORK/ring.json"
  SERVE_RECORD_FILE="${RECORD_DIR:-$WORK}/$name.$$.jsonl"
  trap 'cleanup; rm -f "$SERVE_RECORD_FILE"' EXIT
  local port; port=$(free_port)
  "$PUSHPROOF" serve --h2c --listen "127.0.0.1:$port" --admin off --threads 1 --record "$SERVE_RECORD_FILE" "$@" > "$WORK/serve.log" 2>&1 &
  SERVE_PID=$!; PIDS+=($SERVE_PID)
  wait_for_port "$port"
  SERVE_URL="http://127.0.0.1:$port/3/device/$SERVE_TOKEN"
}
