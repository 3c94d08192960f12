#!/usr/bin/env bash
# The example Python sender (examples/python-sender) next to the reference sender (issue 12 §5):
# a generated poolse group call (ring, one answer, the call ends) through `pushproof run`, once
# with `--sender reference` and once with `--sender-cmd 'python3 …/adapter.py'`, alternated
# ROUNDS times. Prints, per sender, the median of: pushes delivered, the run's total time, the
# time inside the sender (`run --json` timing.sending_s: deciding and delivering every event,
# the ring's fan-out most of it) and pushes/s over that time; then the example's share of the
# reference's pushes/s.
# Usage: Benchmarks/example-sender.sh [MEMBERS [ROUNDS]]   (default: 1000 3)
source "$(dirname "$0")/lib.sh"
MEMBERS="${1:-1000}"
ROUNDS="${2:-3}"
EXAMPLE="python3 $ROOT/examples/python-sender/adapter.py"
scenario="$WORK/group-call-$MEMBERS.json"
sed "s/\"people\": 10000/\"people\": $MEMBERS/" "$ROOT/Benchmarks/scenarios/group-call-10000.json" > "$scenario"

measure() {  # $1: label, rest: sender arguments; prints "pushes total_s sending_s pushes_per_s"
  local label="$1"; shift
  "$PUSHPROOF" run "$scenario" --quiet --json "$WORK/$label.json" --sender-timeout 300 "$@" > "$WORK/$label.txt" 2> "$WORK/$label.err" || {
    echo "$label: the scenario failed" >&2; cat "$WORK/$label.txt" "$WORK/$label.err" >&2; return 1; }
  python3 - "$WORK/$label.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))["scenarios"][0]
t = scenario["timing"]
pushes = sum(len(e["delivered"]) for e in scenario["events"])
print("%d %.3f %.3f %.0f" % (pushes, t["total_s"], t["sending_s"], pushes / t["sending_s"]))
PY
}

: > "$WORK/reference.rows"; : > "$WORK/example.rows"
for round in $(seq 1 "$ROUNDS"); do
  measure reference --sender reference >> "$WORK/reference.rows"
  measure example --sender-cmd "$EXAMPLE" >> "$WORK/example.rows"
done
column() { awk -v c="$1" '{print $c}' "$2" | median; }
printf '%-10s %8s %8s %10s %9s   (%d members, median of %d alternated rounds)\n' sender pushes total_s sending_s pushes/s "$MEMBERS" "$ROUNDS"
for sender in reference example; do
  printf '%-10s %8s %8s %10s %9s\n' "$sender" "$(column 1 "$WORK/$sender.rows")" "$(column 2 "$WORK/$sender.rows")" \
    "$(column 3 "$WORK/$sender.rows")" "$(column 4 "$WORK/$sender.rows")"
done
echo "example/reference pushes/s: $(ratio "$(column 4 "$WORK/example.rows")" "$(column 4 "$WORK/reference.rows")")"
