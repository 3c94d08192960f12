#!/usr/bin/env bash
# What the adapter protocol costs (issue 12): the same reference sender in-process
# (`--sender reference`) and behind the protocol (`--sender-cmd 'pushproof adapter'`),
# alternated round by round, on
#  1. a 10,000-member ring: a generated poolse group (every person a PushKit token, half an
#     Android phone too), one `call.placed`: time to ring all (the event's `sending` time, from
#     the request to the answer once every push is answered) and pushes/s;
#  2. many small events: 20,000 Yama `user.status` events among 3 people (no push, a few
#     devices), `--settle-ms 0`: events/s reaching the sender (events over `sending` time: for
#     the adapter each is a line written, the reference sender's work, a line read back).
# Prints every round, then medians and the ratios (adapter / reference; goal ≥ 0.9 for the
# ring, ≥ 10,000 events/s through the adapter).
# Usage: Benchmarks/adapter-overhead.sh [ROUNDS]   (default 5)
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-5}"
ADAPTER="'$PUSHPROOF' adapter"

python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
ring = {"format": 1, "description": "A 10,000-person poolse group rung once.", "product": "poolse",
        "generate": {"people": 10000, "seed": 11, "devices": {"voip": 1, "alert": 0, "android": 0.5}, "name": "Everyone"},
        "events": [{"type": "call.placed", "call": "k1", "conversation": "c0", "caller": "p0", "media": "audio"}]}
json.dump(ring, open(work + "/ring.json", "w"))
people = [{"id": p, "devices": [{"id": p + "-ios", "platform": "ios"}]} for p in ("ana", "ben", "cy")]
events = [{"type": "user.status", "user": ("ana", "ben", "cy")[i % 3], "status": ("dnd", "available")[(i // 3) % 2]}
          for i in range(20000)]
small = {"format": 1, "description": "20,000 status changes: no push.", "product": "yama", "people": people,
         "rooms": [{"id": "r0", "name": "Room", "members": ["ana", "ben", "cy"]}], "events": events}
json.dump(small, open(work + "/events.json", "w"))
PY

# One run; prints "pushes sending_s total_s events".
measure() {
  local scenario="$1" out="$2"; shift 2
  "$PUSHPROOF" run "$WORK/$scenario.json" --quiet --json "$WORK/$out.json" "$@" > "$WORK/$out.txt" 2> "$WORK/$out.err" || {
    echo "run failed ($out):" >&2; tail -n 20 "$WORK/$out.txt" "$WORK/$out.err" >&2; exit 1; }
  python3 - "$WORK/$out.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
scenario = report["scenarios"][0]
if not report["passed"]:
    sys.exit("the scenario failed: " + json.dumps(scenario["aborted"] or [e["problems"] for e in scenario["events"] if not e["passed"]])[:2000])
t = scenario["timing"]
print(sum(len(e["delivered"]) for e in scenario["events"]), t["sending_s"], t["total_s"], len(scenario["events"]))
PY
}

printf '%5s %-10s %8s %8s %9s %8s\n' round sender pushes ring_s pushes/s total_s > "$WORK/ring.table"
printf '%5s %-10s %8s %9s %9s\n' round sender events sending_s events/s > "$WORK/events.table"
for round in $(seq 1 "$ROUNDS"); do
  # Alternate which goes first, so neither always gets the warmer (or busier) minute.
  if [ $((round % 2)) -eq 1 ]; then order="reference adapter"; else order="adapter reference"; fi
  for sender in $order; do
    if [ "$sender" = reference ]; then args=(--sender reference); else args=(--sender-cmd "$ADAPTER"); fi
    read -r pushes sending total _ < <(measure ring "ring-$sender-$round" "${args[@]}")
    printf '%5s %-10s %8d %8.3f %9.0f %8.2f\n' "$round" "$sender" "$pushes" "$sending" \
      "$(awk -v p="$pushes" -v s="$sending" 'BEGIN { print p / s }')" "$total" >> "$WORK/ring.table"
    read -r _ sending _ events < <(measure events "events-$sender-$round" "${args[@]}" --settle-ms 0)
    printf '%5s %-10s %8d %9.3f %9.0f\n' "$round" "$sender" "$events" "$sending" \
      "$(awk -v e="$events" -v s="$sending" 'BEGIN { print e / s }')" >> "$WORK/events.table"
  done
done

cat "$WORK/ring.table"; echo; cat "$WORK/events.table"; echo
column_median() { awk -v s="$2" -v c="$3" 'NR > 1 && $2 == s { print $c }' "$1" | median; }
ring_ref=$(column_median "$WORK/ring.table" reference 4); ring_adapter=$(column_median "$WORK/ring.table" adapter 4)
rate_ref=$(column_median "$WORK/ring.table" reference 5); rate_adapter=$(column_median "$WORK/ring.table" adapter 5)
events_ref=$(column_median "$WORK/events.table" reference 5); events_adapter=$(column_median "$WORK/events.table" adapter 5)
echo "medians over $ROUNDS rounds (load average: $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "  ring 10,000: time to ring all reference ${ring_ref} s, adapter ${ring_adapter} s;" \
     "pushes/s reference ${rate_ref}, adapter ${rate_adapter}; ratio (adapter / reference pushes/s) $(ratio "$rate_adapter" "$rate_ref")"
echo "  small events: events/s reference ${events_ref}, adapter ${events_adapter}; ratio $(ratio "$events_adapter" "$events_ref")"
