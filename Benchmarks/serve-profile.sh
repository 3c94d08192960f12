#!/usr/bin/env bash
# Where `pushproof serve`'s CPU goes on the benchmark's request (serve-vs-nghttpd.sh, recording
# on): perf samples of the whole serve process (`perf record --call-graph dwarf`, root) during
# h2load, each sample given to the part of the server it was in: libnghttp2 (with the libc it
# calls), the kernel's socket work, the transport (HTTP2Server outside nghttp2: callbacks,
# request building, submit), the APNs service (its payload's JSON apart: a scan for `aps`, or
# with --specs the tape the judge reads), the spec judge (the body's schema, the match table,
# the header rules, the rest: claiming the push, the verdict), the rest of
# `MockGateway.handle`, the record writer (`Recorder.observe`) and the record file's flush
# thread. Each part also in µs a request: its share of the serve process's CPU per request
# over the measured h2load run (/proc, all threads), so two profiles (with and without
# --specs, say) subtract part by part.
#
#   Benchmarks/serve-profile.sh [SERVE FLAGS...]     e.g. --specs Specs --spec-config FILE
#
# Environment: PUSHPROOF, REQUESTS (400000), SECONDS_SAMPLED (2), RECORD_DIR (as
# serve-vs-nghttpd.sh).
source "$(dirname "$0")/lib.sh"
REQUESTS="${REQUESTS:-400000}"; SECONDS_SAMPLED="${SECONDS_SAMPLED:-2}"
start_recording_serve pushproof-profile "$@"
h2load -n 100000 -c 4 -m 100 -t 1 -d "$WORK/ring.json" "${SERVE_HEADERS[@]}" "$SERVE_URL" > /dev/null
perf record --call-graph dwarf,16384 -F 2000 -o "$WORK/perf.data" -p "$SERVE_PID" -- sleep "$SECONDS_SAMPLED" > /dev/null 2>&1 &
PERF_PID=$!
ticks_before=$(cpu_ticks "$SERVE_PID")
h2load -n "$REQUESTS" -c 4 -m 100 -t 1 -d "$WORK/ring.json" "${SERVE_HEADERS[@]}" "$SERVE_URL" | grep -E "^requests:"
ticks_after=$(cpu_ticks "$SERVE_PID")
wait "$PERF_PID" || true
# The profiler's own cost is in these ticks too (a few per cent): compare profiles with profiles.
US_PER_REQUEST=$(awk -v t=$((ticks_after - ticks_before)) -v us="$TICK_US" -v n="$REQUESTS" 'BEGIN { printf "%.3f", t * us / n }')
# The server's frames are found by its binary's path, whatever the file is called (a copy in
# /tmp/pp-new once put every sample under libnghttp2).
perf script -i "$WORK/perf.data" -F ip,sym,dso 2>/dev/null | python3 -c '
import collections, sys
server = "(" + sys.argv[1] + ")"
parts = collections.Counter(); total = 0
for stack in sys.stdin.read().split("\n\n"):
    frames = [f.strip() for f in stack.strip().split("\n") if f.strip()]
    if not frames: continue
    total += 1
    chain = " ".join(frames)
    owner = next((f for f in frames if "libnghttp2" in f or f.endswith(server)), "")
    if "runFlusher" in chain: part = "record file flush thread (its write(2))"
    elif "kernel" in frames[0]: part = "kernel (sockets, epoll)"
    elif "libnghttp2" in owner: part = "libnghttp2 (with the libc it calls)"
    elif "RecorderC7observe" in chain: part = "record writer (Recorder.observe)"
    elif "MockGatewayAAC5judge" in chain:
        if "SchemaTapeProgram" in chain or "JSONSchemaV7isValid" in chain: part = "spec judge: the body schema"
        elif "TapeMatchTable" in chain: part = "spec judge: the match table"
        elif "HeaderRule" in chain: part = "spec judge: the header rules"
        else: part = "spec judge: the rest (the claim, the verdict)"
    elif "APNSServiceC6handle" in chain:
        if "JSONParserO4tape" in chain or "payloadProblem" in chain: part = "APNs service: the payload JSON (tape or scan)"
        else: part = "APNs service: the rest"
    elif "MockGatewayAAC6handle" in chain: part = "rest of MockGateway.handle"
    elif "HTTP2Server" in chain: part = "transport (HTTP2Server outside nghttp2)"
    else: part = "other"
    parts[part] += 1
us = float(sys.argv[2])
print(f"{total} samples; the serve process: {us:.3f} µs CPU a request")
for part, count in parts.most_common(): print(f"{100 * count / total:5.1f}%  {us * count / total:6.3f} µs  {part}")
' "$(readlink -f "$PUSHPROOF")" "$US_PER_REQUEST"
