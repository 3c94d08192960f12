#!/usr/bin/env bash
# A scenario as load against the plain sender, the same fan-out side by side (issue: what one
# machine costs, §3 speed). Two ways of ringing the same 10,000-member group, rounds alternated:
#   send:  `pushproof send ring --members N` (the reference sender alone) against
#          `pushproof serve --specs` over TLS in a process of its own, every push judged;
#   drive: `pushproof drive --scenario` of a generated poolse group with the same devices
#          (a PushKit, an alert and an Android token each, none gone; the ring reaches
#          2 x (N-1) devices, as send ring's does) against the embedded gateway (TLS, specs
#          judged), matching every arrival to its event and timing it.
# Printed per round: pushes/s of each (send: the ring's pushes over its time to ring all;
# drive: sent over the measured time), drive/send, and each side's CPU per push (user+sys of
# every process involved, from /usr/bin/time). The goal: drive >= 0.9x send.
#   Benchmarks/drive-vs-send.sh [ROUNDS=5] [MEMBERS=10000]
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-5}"
MEMBERS="${2:-10000}"
PUSHES=$((2 * (MEMBERS - 1)))
[ -x "$PUSHPROOF" ] || { echo "build it first: swift build -c release --product pushproof" >&2; exit 1; }

PORT=$(free_port)
"$PUSHPROOF" credentials --out "$WORK/cred" --gateway "https://127.0.0.1:$PORT" --bundle-id com.poolse.app >/dev/null
echo '{"poolse": {"bundle_ids": ["com.poolse.app"]}}' > "$WORK/spec-config.json"
cat > "$WORK/ring.json" <<JSON
{"format": 1, "product": "poolse",
 "description": "A generated $MEMBERS-person poolse group: a PushKit, an alert and an Android token each, none gone. p0 calls.",
 "generate": {"people": $MEMBERS, "seed": 11, "devices": {"voip": 1, "alert": 1, "android": 1}, "gone": 0, "name": "Everyone"},
 "events": [{"type": "call.placed", "call": "k1", "conversation": "c0", "caller": "p0", "media": "audio"}]}
JSON

# send: serve in its own process (its CPU counted from /proc), the sender timed by /usr/bin/time.
"$PUSHPROOF" serve --listen "127.0.0.1:$PORT" --admin off --threads 1 --config "$WORK/cred/gateway.json" \
  --specs "$ROOT/Specs" --spec-config "$WORK/spec-config.json" --cert-out "$WORK/cert.pem" --quiet \
  > "$WORK/serve.log" 2>&1 & SERVE_PID=$!; PIDS+=($SERVE_PID)
wait_for_port "$PORT"
TICK=$(getconf CLK_TCK)

send_round() {
  local before after
  before=$(cpu_ticks "$SERVE_PID")
  /usr/bin/time -f '%U %S' -o "$WORK/send.time" "$PUSHPROOF" send ring --members "$MEMBERS" \
    --gateway "https://127.0.0.1:$PORT" --ca "$WORK/cert.pem" --bundle-id com.poolse.app \
    --apns-key "$WORK/cred/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456 \
    --service-account "$WORK/cred/service-account.json" --json "$WORK/send.json" > "$WORK/send.log" 2>&1 \
    || { cat "$WORK/send.log" >&2; return 1; }
  after=$(cpu_ticks "$SERVE_PID")
  python3 - "$WORK/send.json" "$WORK/send.time" "$PUSHES" $((after - before)) "$TICK" <<'PY'
import json, sys
report, (user, system) = json.load(open(sys.argv[1])), open(sys.argv[2]).read().split()[-2:]
pushes, serve_s = int(sys.argv[3]), int(sys.argv[4]) / int(sys.argv[5])
round_ = report["rounds"][0]
if round_["outcomes"].get("delivered") != pushes:
    sys.exit("send ring: not every push was delivered: %s" % round_["outcomes"])
print("%.0f %.1f" % (report["median_throughput_per_s"], 1e6 * (float(user) + float(system) + serve_s) / pushes))
PY
}

drive_round() {
  (cd "$ROOT" && /usr/bin/time -f '%U %S' -o "$WORK/drive.time" "$PUSHPROOF" drive --scenario "$WORK/ring.json" \
    --json "$WORK/drive.json" > "$WORK/drive.log" 2>&1) || { cat "$WORK/drive.log" >&2; return 1; }
  python3 - "$WORK/drive.json" "$WORK/drive.time" "$PUSHES" <<'PY'
import json, sys
report, (user, system) = json.load(open(sys.argv[1])), open(sys.argv[2]).read().split()[-2:]
counts, pushes = report["counts"], int(sys.argv[3])
if not report["passed"] or counts["delivered"] != pushes:
    sys.exit("drive: not every push was delivered as expected: %s" % counts)
print("%.0f %.1f" % (report["throughput_per_s"], 1e6 * (float(user) + float(system)) / pushes))
PY
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); uptime:$(uptime | sed 's/.*load average/ load average/')"
echo "a $MEMBERS-member poolse ring, $PUSHES pushes (PushKit + Android to every member but the caller), TLS, specs judged"
echo "round  send_pushes_s  drive_pushes_s  drive/send  send_cpu_us/push  drive_cpu_us/push"
ratios=()
for round in $(seq 1 "$ROUNDS"); do
  # Which goes first alternates too: the machine's state drifts within a round.
  if [ $((round % 2)) = 1 ]; then read -r s scpu < <(send_round); read -r d dcpu < <(drive_round)
  else read -r d dcpu < <(drive_round); read -r s scpu < <(send_round); fi
  r=$(ratio "$d" "$s"); ratios+=("$r")
  printf "%5s  %13s  %14s  %10s  %16s  %17s\n" "$round" "$s" "$d" "$r" "$scpu" "$dcpu"
done
echo "median drive/send: $(printf '%s\n' "${ratios[@]}" | median) (goal >= 0.9)"
