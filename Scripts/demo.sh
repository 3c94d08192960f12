#!/usr/bin/env bash
# The main job as it exists now: start the mock gateway, send real pushes at it, show the record.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "pushproof demo: not yet wired (see issues)."
.build/release/pushproof help
