#!/usr/bin/env bash
# The validation-cost benchmark (issue 3: what judging a push against its spec costs): records
# poolse traffic with `pushproof serve --h2c --record` (every example of every Specs/poolse
# spec, pushed PER_EXAMPLE times each with h2load), then `pushproof check --timing` judges the
# recording and reports the time spent in SpecSet.judge per request (mean, p50, p99, per spec;
# reading and decoding the recording are not counted).
#
#   Benchmarks/validate-cost.sh [PER_EXAMPLE] [ROUNDS]
#
# PER_EXAMPLE defaults to 2000 (15 examples today: 30000 requests); ROUNDS (3) runs of check on the
# same recording, each printed, then the median of their means. KEEP_RECORDING=FILE keeps a copy
# of the recording (to profile `pushproof check` on it).
source "$(dirname "$0")/lib.sh"
PER_EXAMPLE="${1:-2000}"
ROUNDS="${2:-3}"

# One directory per example: body, path, and the h2load header arguments (one a line).
python3 - "$ROOT/Specs/poolse" "$WORK/examples" <<'PY'
import json, os, sys, glob
source, out = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(source, "*.json"))):
    spec = json.load(open(path))
    for example in spec.get("examples", []):
        d = os.path.join(out, "%02d" % n); n += 1
        os.makedirs(d)
        headers = dict(example.get("headers", {}))
        headers.setdefault("authorization", "bearer benchmark")  # APNs examples carry none; auth is off
        headers.setdefault("content-type", "application/json")
        open(os.path.join(d, "body"), "w").write(json.dumps(example["body"], separators=(",", ":"), ensure_ascii=False))
        open(os.path.join(d, "path"), "w").write(example["path"])
        open(os.path.join(d, "headers"), "w").write("".join("%s: %s\n" % kv for kv in headers.items()))
        open(os.path.join(d, "name"), "w").write("%s: %s" % (spec["id"], example.get("name", "")))
PY

PORT=$(free_port)
"$PUSHPROOF" serve --h2c --listen "127.0.0.1:$PORT" --admin off --threads 1 --record "$WORK/record.jsonl" > "$WORK/serve.log" 2>&1 &
SERVE_PID=$!; PIDS+=($SERVE_PID)
wait_for_port "$PORT"

total=0
for d in "$WORK"/examples/*/; do
  args=()
  while IFS= read -r header; do args+=(-H "$header"); done < "$d/headers"
  out="$(h2load -n "$PER_EXAMPLE" -c 1 -m 10 -t 1 -d "$d/body" "${args[@]}" "http://127.0.0.1:$PORT$(cat "$d/path")" 2>&1)"
  ok=$(echo "$out" | sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p')
  if [ "$ok" != "$PER_EXAMPLE" ]; then echo "$(cat "$d/name"): only ${ok:-0} of $PER_EXAMPLE answered 2xx" >&2; echo "$out" >&2; exit 1; fi
  total=$((total + PER_EXAMPLE))
done
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
lines=$(wc -l < "$WORK/record.jsonl")
[ -n "${KEEP_RECORDING:-}" ] && cp "$WORK/record.jsonl" "$KEEP_RECORDING"
echo "recorded $lines requests ($(ls "$WORK/examples" | wc -l) poolse examples x $PER_EXAMPLE)"

means=()
for round in $(seq 1 "$ROUNDS"); do
  out="$("$PUSHPROOF" check "$WORK/record.jsonl" --specs "$ROOT/Specs" --timing)" || { echo "$out"; echo "check failed" >&2; exit 1; }
  [ "$round" = 1 ] && echo "$out" | sed -n '/^validation cost per request/,/^(all)/p'
  line=$(echo "$out" | grep '^validation cost: ')
  echo "round $round: $line; $(echo "$out" | tail -1)"
  means+=("$(echo "$line" | sed -n 's/.*mean \([0-9.]*\) µs.*/\1/p')")
done
echo "median of mean validation cost per request: $(printf '%s\n' "${means[@]}" | median) µs"
