#!/usr/bin/env bash
# Three segments and two gateways on one machine, each in a network namespace this script
# creates (veth pairs on a bridge in a namespace of its own; the addresses exist only inside
# the namespaces; all removed on exit), at a size above the test's
# (Tests/PushproofCLITests/ScaleOutNamespaceTests.swift). Every push waits a fixed 5 ms at its
# gateway. Runs the load unsplit (one process over both gateways), then as 3 segments from one
# planned start, merges them, and compares: counts, token cleanup and latency count must be
# equal, every percentile of the merged run must be the union histogram's (PyPI hdrhistogram,
# `make test-data`), and both gateways' records are checked as one. Prints the merged report.
# Needs root (ip netns).
#
#   Benchmarks/scale-out.sh [MEMBERS=2000] [RATE=2 calls/s] [DURATION=5 s]
source "$(dirname "$0")/lib.sh"
MEMBERS="${1:-2000}"; RATE="${2:-2}"; DURATION="${3:-5}"
[ "$(id -u)" = 0 ] || { echo "scale-out.sh: network namespaces need root" >&2; exit 1; }
[ -x "$PUSHPROOF" ] || (cd "$ROOT" && swift build -c release --product pushproof >/dev/null)
NS="ppbench$$"
NODES=(gw0 gw1 seg0 seg1 seg2)
addr() { echo "10.201.78.$((11 + $1))"; }
remove_namespaces() {
  for n in "${NODES[@]}" sw; do ip netns del "$NS-$n" 2>/dev/null || true; rm -rf "/etc/netns/$NS-$n"; done
}
trap 'cleanup; remove_namespaces' EXIT
ip netns add "$NS-sw"
ip -n "$NS-sw" link add br0 type bridge
ip -n "$NS-sw" link set br0 up
for i in "${!NODES[@]}"; do
  n="$NS-${NODES[$i]}"
  ip netns add "$n"
  ip -n "$n" link add eth0 type veth peer name port$i netns "$NS-sw"
  ip -n "$NS-sw" link set port$i master br0 up
  ip -n "$n" addr add "$(addr $i)/24" dev eth0
  ip -n "$n" link set eth0 up
  ip -n "$n" link set lo up
  # "gateways" resolves to both replicas, as a headless Service's name does.
  mkdir -p "/etc/netns/$n"
  printf '127.0.0.1 localhost\n%s gateways\n%s gateways\n' "$(addr 0)" "$(addr 1)" > "/etc/netns/$n/hosts"
done
in_node() { local i="$1"; shift; ip netns exec "$NS-${NODES[$i]}" "$@"; }

"$PUSHPROOF" credentials --out "$WORK/cred" --gateway "http://$(addr 0):8443" > /dev/null
python3 - "$WORK/cred/gateway.json" <<'PY'
import json, sys
path = sys.argv[1]
config = json.load(open(path))
config["faults"] = {"apns": {"latency": {"fixed_ms": 5}}, "fcm": {"latency": {"fixed_ms": 5}}}
json.dump(config, open(path, "w"))
PY
# Fresh replicas for each run ($1 names its records): a record of one run, as `check` judges
# one sender's traffic (a second run pushes again to the tokens the first found gone).
start_gateways() {
  GATEWAYS=()
  for g in 0 1; do
    in_node $g "$PUSHPROOF" serve --h2c --listen "$(addr $g):8443" --admin "$(addr $g):9090" --config "$WORK/cred/gateway.json" \
      --specs "$ROOT/Specs" --record "$WORK/$1-gateway-$g.jsonl" --quiet > "$WORK/serve-$g.out" 2>&1 &
    GATEWAYS+=($!); PIDS+=($!)
  done
  for _ in $(seq 100); do grep -q ready "$WORK/serve-0.out" && grep -q ready "$WORK/serve-1.out" && break; sleep 0.1; done
}
stop_gateways() { kill "${GATEWAYS[@]}"; wait "${GATEWAYS[@]}" 2>/dev/null || true; }
start_gateways unsplit
DRIVE=("$PUSHPROOF" drive ring-fanout --members "$MEMBERS" --rate "$RATE" --duration "$DURATION" --h2c --gone-tokens 20
       --gateway "http://$(addr 0):8443" --gateway "http://$(addr 1):8443" --admin http://gateways:9090
       --apns-key "$WORK/cred/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456
       --service-account "$WORK/cred/service-account.json")

echo "== unsplit: one process (node seg0), 2 delivery threads, one a gateway"
in_node 2 "${DRIVE[@]}" --json "$WORK/whole.json" --quiet > "$WORK/whole.txt" || true
stop_gateways
start_gateways split
START=$(( $(date +%s%3N) + 5000 ))
echo "== 3 segments, --start-at $START"
for i in 0 1 2; do
  in_node $((2 + i)) "${DRIVE[@]}" --segment "$i/3" --start-at "$START" --result "$WORK/seg-$i.json" --quiet > "$WORK/seg-$i.txt" 2>&1 &
  SEGMENTS[$i]=$!
done
for i in 0 1 2; do wait "${SEGMENTS[$i]}" || true; done
echo "== merged"
"$PUSHPROOF" merge "$WORK"/seg-{0,1,2}.json --json "$WORK/merged.json" || true
echo "== both records checked as one"
"$PUSHPROOF" check "$WORK/split-gateway-0.jsonl" "$WORK/split-gateway-1.jsonl" --specs "$ROOT/Specs" --replica-names gw0,gw1 || true

PYTHONPATH="$ROOT/.build/test-data/hdrhistogram-py" python3 - "$WORK" <<'PY'
import json, subprocess, sys
work = sys.argv[1]
whole, merged = (json.load(open(f"{work}/{n}.json")) for n in ("whole", "merged"))
failures = []
for key in ("sent", "completed", "delivered", "failed", "fan_outs", "fan_outs_fully_delivered", "iterations"):
    if whole["counts"].get(key) != merged["counts"].get(key):
        failures.append(f"counts.{key}: unsplit {whole['counts'].get(key)}, merged {merged['counts'].get(key)}")
for key in ("tokens_removed", "devices_deleted"):
    if whole["token_cleanup"][key] != merged["token_cleanup"][key]:
        failures.append(f"token_cleanup.{key}: unsplit {whole['token_cleanup'][key]}, merged {merged['token_cleanup'][key]}")
try:
    from hdrh.histogram import HdrHistogram
    union = None
    for i in range(3):
        for line in json.load(open(f"{work}/seg-{i}.json"))["histograms"].splitlines():
            if line.startswith("Tag=latency,"):
                h = HdrHistogram.decode(line.split(",")[-1])
                union = h if union is None else (union.add(h) or union)
    for ours, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        theirs = union.get_value_at_percentile(p)
        mine = merged["latency_ns"][ours]
        # pushproof reports a bucket's lowest value, the Python reader its highest equivalent one.
        if not (mine <= theirs and union.get_lowest_equivalent_value(theirs) <= mine):
            failures.append(f"latency {ours}: merged {mine} ns, union {theirs} ns")
    print(f"union of the 3 latency histograms (hdrhistogram {union.get_total_count()} values): "
          f"p50 {union.get_value_at_percentile(50)/1e6:.2f} ms, p99 {union.get_value_at_percentile(99)/1e6:.2f} ms")
except ImportError:
    print("PyPI hdrhistogram not in .build/test-data (make test-data): percentiles not compared")
w, m = whole["counts"], merged["counts"]
print(f"unsplit: {w['sent']} sent, {w['delivered']} delivered, {whole['token_cleanup']['tokens_removed']} found gone; "
      f"{whole['throughput_per_s']:.0f} pushes/s, p99 {whole['latency_ns']['p99']/1e6:.2f} ms")
print(f"merged:  {m['sent']} sent, {m['delivered']} delivered, {merged['token_cleanup']['tokens_removed']} found gone; "
      f"{merged['throughput_per_s']:.0f} pushes/s, p99 {merged['latency_ns']['p99']/1e6:.2f} ms")
print("equal" if not failures else "DIFFERENT:\n  " + "\n  ".join(failures))
sys.exit(1 if failures else 0)
PY
