#!/usr/bin/env bash
# HdrHistogram's own Java tools read pushproof's histogram logs: the `latency` intervals of one
# or more segment results (`drive --result`), through HistogramLogProcessor (Debian's
# libhdrhistogram-java, installed here if missing), must give the percentiles and count that
# `pushproof merge` reports for them (one result: that segment's own report), to the bucket.
#
#   Benchmarks/hdr-java-check.sh RESULT.json [RESULT.json ...]
source "$(dirname "$0")/lib.sh"
[ $# -ge 1 ] || { echo "usage: $0 RESULT.json [RESULT.json ...]" >&2; exit 64; }
JAR=/usr/share/java/hdrhistogram.jar
if [ ! -f "$JAR" ] || ! command -v java >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "hdr-java-check: needs libhdrhistogram-java and a JRE (apt-get install libhdrhistogram-java default-jre-headless)" >&2; exit 1; }
  apt-get install -y -q --no-install-recommends libhdrhistogram-java default-jre-headless > "$WORK/apt.log"
fi
[ -x "$PUSHPROOF" ] || (cd "$ROOT" && swift build -c release --product pushproof >/dev/null)
if [ $# -gt 1 ]; then
  "$PUSHPROOF" merge "$@" --max-start-skew 3600000 --json "$WORK/ours.json" --quiet > /dev/null || true
else
  python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["summary"], open(sys.argv[2], "w"))' "$1" "$WORK/ours.json"
fi
# One log: the first result's headers, every result's latency interval.
python3 - "$WORK/latency.hlog" "$@" <<'PY'
import json, sys
out, results = sys.argv[1], sys.argv[2:]
lines = []
for index, path in enumerate(results):
    for line in json.load(open(path))["histograms"].splitlines():
        if line.startswith("#") or line.startswith('"StartTimestamp"'):
            if index == 0: lines.append(line)
        elif line.startswith("Tag=latency,"):
            lines.append(line)
open(out, "w").write("\n".join(lines) + "\n")
PY
java -cp "$JAR" org.HdrHistogram.HistogramLogProcessor -i "$WORK/latency.hlog" -tag latency -outputValueUnitRatio 1 \
  -o "$WORK/java" > "$WORK/java.log" 2>&1
python3 - "$WORK/java.hgrm" "$WORK/ours.json" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 4 and not line.startswith("#"):
        try: rows.append((float(parts[1]), float(parts[0]), int(parts[2])))
        except ValueError: pass
total = rows[-1][2]
def at(p):  # the first value at or past percentile p, as HistogramLogProcessor prints them
    return next(value for percentile, value, _ in rows if percentile >= p)
ours = json.load(open(sys.argv[2]))["latency_ns"]
failures = []
print(f"{'':8} {'HistogramLogProcessor':>22} {'pushproof':>14}")
for name, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
    theirs = int(at(p))
    print(f"{name:8} {theirs:>22} {ours[name]:>14}")
    # Java prints a bucket's highest equivalent value; pushproof caps a percentile at the largest
    # value recorded. Both name one bucket of 3 significant digits (under 0.1% wide).
    if not (ours[name] <= theirs and theirs - ours[name] < theirs / 1000): failures.append(name)
print(f"{'count':8} {total:>22} {ours['count']:>14}")
if total != ours["count"]: failures.append("count")
print("equal" if not failures else "DIFFERENT: " + ", ".join(failures))
sys.exit(1 if failures else 0)
PY
