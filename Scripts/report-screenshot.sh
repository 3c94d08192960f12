#!/bin/sh
# Renders a load report of the 1,000-person message storm (ramping into saturation, so latency
# over time rises and served falls below offered) and takes a headless-Chromium screenshot of
# it, for checking by eye that nothing is clipped: Scripts/report-screenshot.sh [OUT_DIR].
# Needs a release build (make release) and chromium (apt-get install chromium).
set -eu
out=${1:-.build/report-screenshot}
mkdir -p "$out"
bin=${PUSHPROOF_BIN:-.build/release/pushproof}
"$bin" drive --scenario Benchmarks/scenarios/message-storm-1000.json --stages 3s:40,3s:40 \
    --html "$out/storm.html" --json "$out/storm.json" --quiet
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,2600 \
    --screenshot="$out/storm.png" "file://$(cd "$out" && pwd)/storm.html" 2>/dev/null
echo "report-screenshot: $out/storm.html, $out/storm.png"
