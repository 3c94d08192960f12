#!/usr/bin/env bash
# Hostile clients (issue 9): every attack of the probe against `pushproof serve`, each on a
# fresh server with one event loop, all on 127.0.0.1 and bounded in count and time (~3 min).
# One line per attack: the server's peak RSS, the worst wait of a normal HTTP/1.1 request sent
# every 100 ms meanwhile, and the outcome. The attacker is Benchmarks/hostile.py (stdlib only).
#
#   Benchmarks/hostile.sh [ATTACK ...]     (default: all; PUSHPROOF=path picks another build)
source "$(dirname "$0")/lib.sh"
python3 "$ROOT/Benchmarks/hostile.py" "$PUSHPROOF" "$WORK" "$@"
