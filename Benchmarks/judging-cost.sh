#!/usr/bin/env bash
# What judging costs a request of `serve --record`, part by part: serve-profile.sh without and
# with `--specs Specs` (poolse's bundle id set to the benchmark's topic, so every request is
# judged and passes, as serve-vs-nghttpd.sh's SPECS=1), PAIRS times in turn, and for each part
# the median µs a request of each mode and their difference. The parts that exist only with
# specs (the judge's) and the ones that cost more with them (the payload's tape against the
# scan for `aps`, the verdict's way to the record) add up to what judging costs; the parts
# that do not change show the noise. Benchmarks/README.md, "Round 6".
#
#   Benchmarks/judging-cost.sh [PAIRS=2]
#
# Environment: PUSHPROOF, REQUESTS, SECONDS_SAMPLED, RECORD_DIR (as serve-profile.sh). Needs
# perf and root, as serve-profile.sh does.
source "$(dirname "$0")/lib.sh"
PAIRS="${1:-2}"
echo '{"poolse":{"bundle_ids":["com.poolse.app"]}}' > "$WORK/spec-config.json"
for pair in $(seq 1 "$PAIRS"); do
  "$ROOT/Benchmarks/serve-profile.sh" > "$WORK/none-$pair.txt"
  "$ROOT/Benchmarks/serve-profile.sh" --specs "$ROOT/Specs" --spec-config "$WORK/spec-config.json" > "$WORK/specs-$pair.txt"
  echo "pair $pair: $(sed -n 's/.*the serve process: \(.*\) µs CPU a request/\1/p' "$WORK/none-$pair.txt") µs without specs," \
       "$(sed -n 's/.*the serve process: \(.*\) µs CPU a request/\1/p' "$WORK/specs-$pair.txt") µs with"
done
python3 - "$WORK" "$PAIRS" <<'PY'
import re, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
def parts(path):
    found = {}
    for line in open(path):
        if m := re.match(r"\s*[\d.]+%\s+([\d.]+) µs\s+(.*)", line): found[m.group(2).strip()] = float(m.group(1))
        elif m := re.search(r"the serve process: ([\d.]+) µs", line): found["the serve process"] = float(m.group(1))
    return found
none = [parts(f"{work}/none-{p}.txt") for p in range(1, pairs + 1)]
specs = [parts(f"{work}/specs-{p}.txt") for p in range(1, pairs + 1)]
names = sorted({n for run in none + specs for n in run} - {"the serve process"})
median = lambda runs, name: statistics.median(run.get(name, 0.0) for run in runs)
rows = sorted(((median(specs, n) - median(none, n), n) for n in names), reverse=True)
print(f"\n{'part (medians of ' + str(pairs) + ' pairs, µs a request)':60s} {'none':>7s} {'specs':>7s} {'judging':>8s}")
for delta, name in rows + [(median(specs, "the serve process") - median(none, "the serve process"), "the serve process")]:
    print(f"{name:60s} {median(none, name):7.3f} {median(specs, name):7.3f} {delta:+8.3f}")
PY
