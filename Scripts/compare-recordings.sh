#!/usr/bin/env bash
# Records the same mixed load with two pushproof binaries and compares the recordings: every
# line must be equal except for what differs between any two runs (times, sequence numbers,
# generated ids). Used when the gateway's request path changes (issue 13): answers and record
# bytes must stay identical.
#
#   Scripts/compare-recordings.sh BEFORE_BINARY AFTER_BINARY [REQUESTS_PER_KIND=2000]
#
# The load (h2load over h2c, then curl over HTTP/1.1) covers the success path and the common
# refusals: good VoIP and alert pushes (one without a newline at its end), a bad topic, a bad priority, a bad expiration, a bad
# apns-id, an unknown push type, missing authorization, an empty payload, a bad path, duplicate
# headers, a GET (no body); an FCM send and a 404 over HTTP/1.1. It runs once without and once with
# `--specs`. Normalised away: `seq`, `time`, `arrival_ns`, `answered_ns`, `connection` (ids of
# concurrent connections), the loopback port (in `authority` and `host`: each run listens on its
# own), a generated `apns-id`/`apns-unique-id` answer header, the id in an FCM message name; lines
# are sorted, since concurrent streams finish in any order; `v` is dropped and a format-2 `json`
# body compared as the string of its bytes (format 1's `body`). Exit 0 when both match.
set -euo pipefail
BEFORE="${1:?before binary}"; AFTER="${2:?after binary}"; N="${3:-2000}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d /tmp/pushproof-compare.XXXXXX)"
SERVE_PID=""
cleanup() { [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

TOKEN=7f3c5d1e9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d
cat > "$WORK/ring.json" <<'JSON'
{"cv":"1","type":"call","event":"ring","call_id":"4a69d2c2-8a53-4c53-9f64-6f4bbd0f9f11","conversation_id":"6f1c8e0e-3a0b-4d5e-8a1b-2c3d4e5f6a7b","conversation_name":"Engineering \"core\" \u00e9","caller_user_id":"2b7e151628aed2a6abf71589","caller_name":"Alice","media":"video","has_video":true,"ring_deadline":1793952045000,"sent_at":1793952000000}
JSON
echo '{"aps":{"alert":{"title":"Hi","body":"line\nbreak"},"sound":"default"},"k":[1,2,{"x":null}]}' > "$WORK/alert.json"
echo '{"message":{"token":"abc","data":{"k":"v"}}}' > "$WORK/fcm.json"
echo "[1]" > "$WORK/array.json"
# No newline at the end (as a sender's encoder writes it), a repeated key, a number spelled
# 1.50: format 2 holds it as its bytes (`json`), format 1 as a string.
printf '%s' '{"aps":{"alert":{"title":"Hi"}},"n":1.50,"n":2}' > "$WORK/bare.json"
echo '{"poolse":{"bundle_ids":["com.poolse.app"]}}' > "$WORK/spec-config.json"
JWT="bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyMzQ1NjcifQ.eyJpc3MiOiJERUYxMjM0NTY3IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLXRoYXQtbXVzdC1uZXZlci1iZS1yZWNvcmRlZA"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_for_port() {
  for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on port $1" >&2; return 1
}

# One h2load run of one kind of request: h2load KIND-ARGS... URL
load() {
  local port=$1; shift
  local path=$1; shift
  h2load -n "$N" -c 2 -m 10 -t 1 "$@" "http://127.0.0.1:$port$path" > /dev/null
}

record() {  # record BINARY OUT [serve flags...]
  local binary=$1 out=$2; shift 2
  local port; port=$(free_port)
  "$binary" serve --h2c --listen "127.0.0.1:$port" --admin off --threads 1 --record "$out" "$@" \
    > "$WORK/serve.log" 2>&1 & SERVE_PID=$!
  wait_for_port "$port"
  local voip=(-H "apns-push-type: voip" -H "apns-topic: com.poolse.app.voip" -H "apns-priority: 10"
              -H "apns-expiration: 0" -H "authorization: $JWT" -H "content-type: application/json")
  local dev="/3/device/$TOKEN"
  load "$port" "$dev" -d "$WORK/ring.json" "${voip[@]}"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "authorization: bearer x" \
       -H "apns-id: 123e4567-e89b-12d3-a456-426614174000" -H "apns-collapse-id: c1"
  load "$port" "$dev" -d "$WORK/ring.json" -H "apns-push-type: voip" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "apns-priority: 7" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "apns-expiration: soon" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "apns-id: nope" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "apns-push-type: fax" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app"
  load "$port" "$dev" -d "$WORK/array.json" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/bare.json" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "/3/device/zz" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "/3/other" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "$dev" -d "$WORK/alert.json" -H "apns-topic: com.poolse.app" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "$dev" -H "apns-topic: com.poolse.app" -H "authorization: bearer x"
  load "$port" "/v1/projects/p/messages:send" -d "$WORK/fcm.json" -H "authorization: Bearer t" -H "content-type: application/json"
  for _ in 1 2 3; do
    curl -s -o /dev/null --http1.1 -X POST --data-binary @"$WORK/fcm.json" -H "content-type: application/json" \
         "http://127.0.0.1:$port/v1/projects/p/messages:send"
    curl -s -o /dev/null --http1.1 "http://127.0.0.1:$port/nothing?x=1"
  done
  sleep 0.3  # the record file flushes every 10 ms
  kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true; SERVE_PID=""
}

normalise() {  # normalise IN OUT
  python3 - "$1" "$2" <<'PY'
import json, re, sys
generated = {"apns-id", "apns-unique-id"}
decoder = json.JSONDecoder()
out = []
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        line = re.sub(r"127\.0\.0\.1:[0-9]+", "127.0.0.1:<port>", line)
        line = re.sub(r"messages/0:[0-9]+", "messages/<generated>", line)  # FCM message names
        o = json.loads(line)
        # Format 2 holds a JSON body as its bytes (`json`), format 1 as a string (`body`): the
        # same bytes compare equal, so a version-1 binary's recording compares with a version-2 one.
        def as_body(holder, at):  # the `json` member at or after `at`, as format 1's `body`
            at = line.index(',"json":', at) + len(',"json":')
            _, end = decoder.raw_decode(line, at)
            holder["body"] = line[at:end]
            del holder["json"]
            return end
        if o.get("v") == 2:
            at = as_body(o, 0) if "json" in o else 0
            if "json" in o.get("response", {}):
                as_body(o["response"], line.index(',"response":{', at))
        for k in ("v", "seq", "time", "arrival_ns", "answered_ns", "connection"):
            o.pop(k, None)
        given = {v for n, v in o.get("headers", []) if n == "apns-id"}
        resp = o.get("response", {})
        resp["headers"] = [[n, v if n not in generated or v in given else "<generated>"]
                           for n, v in resp.get("headers", [])]
        out.append(json.dumps(o, sort_keys=True, ensure_ascii=False))
out.sort()
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write("\n".join(out) + "\n")
print(len(out), "lines")
PY
}

status=0
for mode in plain specs; do
  flags=()
  [ "$mode" = specs ] && flags=(--specs "$ROOT/Specs" --spec-config "$WORK/spec-config.json")
  record "$BEFORE" "$WORK/before-$mode.jsonl" "${flags[@]}"
  record "$AFTER" "$WORK/after-$mode.jsonl" "${flags[@]}"
  echo -n "$mode: before "; normalise "$WORK/before-$mode.jsonl" "$WORK/before-$mode.norm"
  echo -n "$mode: after  "; normalise "$WORK/after-$mode.jsonl" "$WORK/after-$mode.norm"
  if cmp -s "$WORK/before-$mode.norm" "$WORK/after-$mode.norm"; then
    echo "$mode: recordings equal (except times, sequence numbers, connection and generated ids)"
  else
    echo "$mode: recordings DIFFER:"; diff "$WORK/before-$mode.norm" "$WORK/after-$mode.norm" | cut -c1-400 | head -8
    status=1
  fi
done
exit $status
