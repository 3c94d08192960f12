#!/usr/bin/env bash
# `pushproof run`'s peak memory against the population: the generated poolse group call of
# run-scenario.sh (every person a PushKit token, half an Android phone, 2% of tokens gone; the
# call placed, answered, ended) at each size, through each binary in turn (before/after
# alternated round by round). Prints per run: peak RSS (/usr/bin/time -v), pushes accepted,
# wall time and judging's share of the run (`run --json` timing).
# Usage: Benchmarks/run-memory.sh ROUNDS "MEMBERS…" BINARY…
#   e.g. Benchmarks/run-memory.sh 2 "10000 100000" /tmp/pushproof-before .build/release/pushproof
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-1}"; SIZES=(${2:-10000 100000}); shift 2 || true
BINARIES=("$@"); [ ${#BINARIES[@]} -gt 0 ] || BINARIES=("$PUSHPROOF")
TEMPLATE="$ROOT/Benchmarks/scenarios/group-call-10000.json"

printf '%-40s %8s %6s %8s %8s %8s %8s\n' binary members round pushes total_s judging rss_mb
for members in "${SIZES[@]}"; do
  scenario="$WORK/group-call-$members.json"
  sed "s/\"people\": 10000/\"people\": $members/" "$TEMPLATE" > "$scenario"
  for round in $(seq 1 "$ROUNDS"); do
    for binary in "${BINARIES[@]}"; do
      # Each binary judges with the specs of the checkout it was built from; run from $ROOT
      # so both find this one's.
      (cd "$ROOT" && /usr/bin/time -v -o "$WORK/time.txt" "$binary" run "$scenario" --quiet --json "$WORK/run.json" > "$WORK/run.txt")
      rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/time.txt")
      python3 - "$WORK/run.json" "$binary" "$members" "$round" "$rss_kb" <<'PY'
import json, sys
path, binary, members, round_, rss = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
report = json.load(open(path))
scenario = report["scenarios"][0]
if not report["passed"]:
    sys.exit("the scenario failed: " + json.dumps([e["problems"] for e in scenario["events"] if not e["passed"]])[:2000])
t = scenario["timing"]
pushes = sum(len(e["delivered"]) for e in scenario["events"])
print("%-40s %8s %6s %8d %8.1f %7.1f%% %8.1f" % (binary[-40:], members, round_, pushes, t["total_s"],
      100 * t["judging_s"] / t["total_s"], rss / 1024))
PY
    done
  done
done
echo "(time -v and run reports in $WORK are removed on exit)"
