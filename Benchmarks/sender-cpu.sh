#!/usr/bin/env bash
# What the reference sender's process spends on a fan-out: user and system CPU and context
# switches (getrusage of the child), for a build and optionally a second one (BASE=path to
# another pushproof binary), alternated, against one `pushproof serve --h2c --threads 1`.
# The fan-out: `send ring --members 20001 --repeat 4 --transport apns --streams 100
# --max-in-flight 100` (80,000 pushes, workspace set-up included).
#
#   Benchmarks/sender-cpu.sh [ROUNDS=3]
#   BASE=/tmp/pushproof-before Benchmarks/sender-cpu.sh 3
source "$(dirname "$0")/lib.sh"
ROUNDS="${1:-3}"
[ -x "$PUSHPROOF" ] || { echo "build it first: swift build -c release --product pushproof" >&2; exit 1; }
"$PUSHPROOF" credentials --out "$WORK/cred" >/dev/null
PORT=$(free_port)
"$PUSHPROOF" serve --h2c --listen "127.0.0.1:$PORT" --admin off --threads 1 --quiet > "$WORK/serve.log" 2>&1 & PIDS+=($!)
wait_for_port "$PORT"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ); uptime:$(uptime | sed 's/.*load average/ load average/')"
echo "build  round  user_s  sys_s  voluntary_ctx  involuntary_ctx  pushes/s(median of 4)"
measure() {
  python3 - "$1" "$2" "$PORT" "$WORK/cred" <<'PY'
import resource, subprocess, sys, re
binary, label, port, cred = sys.argv[1:5]
args = [binary, "send", "ring", "--members", "20001", "--repeat", "4", "--transport", "apns", "--h2c",
        "--gateway", f"http://127.0.0.1:{port}", "--connections", "1", "--streams", "100", "--max-in-flight", "100",
        "--apns-key", f"{cred}/apns-key.p8", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(args, capture_output=True, text=True)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
if out.returncode != 0: sys.exit(f"send failed: {out.stdout}{out.stderr}")
rate = re.search(r"median throughput over \d+ rounds: (\d+)", out.stdout)
print(f"  {after.ru_utime - before.ru_utime:6.2f}  {after.ru_stime - before.ru_stime:5.2f}  "
      f"{after.ru_nvcsw - before.ru_nvcsw:13d}  {after.ru_nivcsw - before.ru_nivcsw:15d}  {rate.group(1) if rate else '?'}")
PY
}
for round in $(seq 1 "$ROUNDS"); do
  printf "new    %5s" "$round"; measure "$PUSHPROOF" ""
  if [ -n "${BASE:-}" ]; then printf "base   %5s" "$round"; measure "$BASE" ""; fi
done
