#!/usr/bin/env bash
# `plan --target-members` on this machine: one `pushproof serve --h2c --threads 1 --specs shipped
# --record FILE` (a gateway core as a fleet's gateways run: every push judged and recorded), and
# `plan` measuring the reference sender's set-ups against it and the gateway's CPU per push
# through its control API, then sizing the fleet for TARGET members within WITHIN.
#
#   Benchmarks/plan-fleet.sh [TARGET=200000] [WITHIN=2s] [MEMBERS=10000] [CALLS=3]
source "$(dirname "$0")/lib.sh"
TARGET="${1:-200000}"; WITHIN="${2:-2s}"; MEMBERS="${3:-10000}"; CALLS="${4:-3}"
[ -x "$PUSHPROOF" ] || { echo "build it first: swift build -c release --product pushproof" >&2; exit 1; }
PORT=$(free_port); ADMIN=$(free_port)
"$PUSHPROOF" credentials --out "$WORK/cred" --gateway "http://127.0.0.1:$PORT" >/dev/null
"$PUSHPROOF" serve --h2c --listen "127.0.0.1:$PORT" --admin "127.0.0.1:$ADMIN" --threads 1 --specs shipped \
  --record "$WORK/record.jsonl" --config "$WORK/cred/gateway.json" --quiet > "$WORK/serve.log" 2>&1 & PIDS+=($!)
wait_for_port "$PORT"; wait_for_port "$ADMIN"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ); $(nproc) cores; uptime:$(uptime | sed 's/.*load average/ load average/')"
set +e
"$PUSHPROOF" plan --target-members "$TARGET" --within "$WITHIN" --members "$MEMBERS" --calls "$CALLS" --quiet \
  --h2c --gateway "http://127.0.0.1:$PORT" --admin "http://127.0.0.1:$ADMIN" \
  --apns-key "$WORK/cred/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456 \
  --service-account "$WORK/cred/service-account.json" --token-url "http://127.0.0.1:$PORT/token" ${PLAN_EXTRA:-}
echo "exit status: $?"
