#!/usr/bin/env bash
# `pushproof run` at scale (issue 11): a generated poolse group call (ring, one answer, the
# call ends) through the reference sender and the embedded gateway, at several sizes. Prints
# pushes/s, where the run's time went (`run --json` timing: sending, settling, the oracle,
# judging, and the wall time of the reads judged beside the sender) and peak RSS
# (/usr/bin/time -v), with the memory each push over the previous size cost, to show judging
# stays a small share and memory per push stays flat.
# Usage: Benchmarks/run-scenario.sh [MEMBERS…]   (default: 1000 10000)
# BINARIES="/tmp/before /tmp/after" ROUNDS=2 runs each size that many rounds, the binaries in
# turn within each round (before/after alternated), each row naming its binary.
source "$(dirname "$0")/lib.sh"
SIZES=("$@"); [ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 10000)
TEMPLATE="$ROOT/Benchmarks/scenarios/group-call-10000.json"

read -r -a BINARIES <<< "${BINARIES:-$PUSHPROOF}"
ROUNDS="${ROUNDS:-1}"
printf '%8s %8s %8s %9s %8s %8s %7s %8s %10s %7s %13s  %s\n' \
  members pushes total_s pushes/s sending settling oracle judging reads_wall rss_mb kb/extra_push binary
declare -A previous current
for members in "${SIZES[@]}"; do
  scenario="$WORK/group-call-$members.json"
  sed "s/\"people\": 10000/\"people\": $members/" "$TEMPLATE" > "$scenario"
  for round in $(seq 1 "$ROUNDS"); do
  for binary in "${BINARIES[@]}"; do
  # Run from the checkout, so every binary judges with this one's specs.
  (cd "$ROOT" && /usr/bin/time -v -o "$WORK/time-$members.txt" "$binary" run "$scenario" --quiet --json "$WORK/run-$members.json" \
    > "$WORK/run-$members.txt")
  rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time-$members.txt")
  row=$(python3 - "$WORK/run-$members.json" "$members" "$rss_kb" ${previous[$binary]:-0 0} <<'PY'
import json, sys
path, members, rss = sys.argv[1], sys.argv[2], int(sys.argv[3])
previous_pushes, previous_rss = int(sys.argv[4]), int(sys.argv[5])
report = json.load(open(path))
scenario = report["scenarios"][0]
if not report["passed"]:
    sys.exit("the scenario failed: " + json.dumps([e["problems"] for e in scenario["events"] if not e["passed"]])[:2000])
t = scenario["timing"]
pushes = sum(len(e["delivered"]) for e in scenario["events"])
share = lambda key: "%.1f%%" % (100 * t[key] / t["total_s"])
# What the pushes beyond the previous size cost in peak RSS (the first row: over an empty process).
extra = "%.2f" % ((rss - previous_rss) / (pushes - previous_pushes)) if pushes > previous_pushes else "-"
# judging_s counts the reads beside the sender by their CPU time; reads_wall is their wall time
# (the same reads, with whatever else had the cores meanwhile). Older binaries have none.
reads_wall = share("judging_reads_wall_s") if "judging_reads_wall_s" in t else "-"
print("%8s %8d %8.2f %9.0f %8s %8s %7s %8s %10s %7.1f %13s|%d %d" % (
    members, pushes, t["total_s"], pushes / t["total_s"], share("sending_s"), share("settling_s"), share("oracle_s"),
    share("judging_s"), reads_wall, rss / 1024, extra, pushes, rss))
PY
  )
  echo "${row%%|*}  ${binary}"
  [ "$round" -gt 1 ] || current[$binary]="${row##*|}"
  done
  done
  for binary in "${BINARIES[@]}"; do previous[$binary]="${current[$binary]}"; done
done
echo "(time -v and run reports in $WORK are removed on exit)"
