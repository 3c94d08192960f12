#!/usr/bin/env bash
# What a segment costs (issue 22: "a 1/1 segment costs what an unsegmented run costs"): the
# same `drive ring-fanout` against one `pushproof serve --h2c`, alternated ROUNDS times without
# segment options and with `--segment 0/1 --start-at <now + 1 s> --result FILE`. Prints each
# run's pushes/s and the sender process's CPU per push (user + sys of the drive process), and
# the medians of both.
#
#   Benchmarks/segment-overhead.sh [ROUNDS=5] [MEMBERS=2000] [CALLS=10]
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-5}"; MEMBERS="${2:-2000}"; CALLS="${3:-10}"
[ -x "$PUSHPROOF" ] || (cd "$ROOT" && swift build -c release --product pushproof >/dev/null)
PORT=$(free_port)
"$PUSHPROOF" credentials --out "$WORK/creds" --gateway "http://127.0.0.1:$PORT" >/dev/null
"$PUSHPROOF" serve --h2c --listen "127.0.0.1:$PORT" --admin 127.0.0.1:0 --config "$WORK/creds/gateway.json" \
  > "$WORK/serve.out" 2> "$WORK/serve.err" &
PIDS+=($!)
wait_for_port "$PORT"
DRIVE=(drive ring-fanout --members "$MEMBERS" --count "$CALLS" --h2c --gateway "http://127.0.0.1:$PORT"
       --apns-key "$WORK/creds/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456
       --service-account "$WORK/creds/service-account.json" --json "$WORK/run.json" --quiet)
one_run() {  # $1: label; the rest: extra drive options. Prints "label pushes/s cpu-us-per-push".
  local label="$1"; shift
  /usr/bin/time -f "%U %S" -o "$WORK/time.txt" "$PUSHPROOF" "${DRIVE[@]}" "$@" > /dev/null 2>> "$WORK/drive.err"
  python3 - "$label" "$WORK/run.json" "$WORK/time.txt" <<'PY'
import json, sys
label, report, times = sys.argv[1:]
summary = json.load(open(report))
user, system = map(float, open(times).read().split()[-2:])
pushes = summary["counts"]["completed"]
print(f"{label} {summary['throughput_per_s']:.0f} {1e6 * (user + system) / max(1, pushes):.2f}")
PY
}
: > "$WORK/rows.txt"
for round in $(seq "$ROUNDS"); do
  one_run none >> "$WORK/rows.txt"
  start=$(( $(date +%s%3N) + 1000 ))
  one_run segment-0/1 --segment 0/1 --start-at "$start" --result "$WORK/segment.json" >> "$WORK/rows.txt"
done
echo "run          pushes/s  CPU µs/push"
awk '{printf "%-12s %8s  %s\n", $1, $2, $3}' "$WORK/rows.txt"
for label in none segment-0/1; do
  rate=$(awk -v l="$label" '$1 == l {print $2}' "$WORK/rows.txt" | median)
  cpu=$(awk -v l="$label" '$1 == l {print $3}' "$WORK/rows.txt" | median)
  echo "median $label: $rate pushes/s, $cpu µs CPU a push"
done
