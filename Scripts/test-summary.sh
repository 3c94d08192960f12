#!/usr/bin/env bash
# Prints one closing line for a `swift test` log: how many Swift Testing tests passed, failed
# and were skipped (with each skip's reason above it). Swift Testing's own closing line
# ("Test run with N tests ... passed") does not count skips, and a skipped test (for example
# the quote check of `specs lint`, which needs product documents a clone does not have) should
# be seen, not silent.
set -u
log=${1:?usage: test-summary.sh SWIFT-TEST-LOG}
# Per-test lines only: the closing "Test run with N tests ..." line matches the same shape.
passed=$(grep -E '^✔ Test .* passed after' "$log" | grep -cv '^✔ Test run with')
failed=$(grep -E '^✘ Test .* failed after' "$log" | grep -cv '^✘ Test run with')
skipped=$(grep -cE '^➜ Test .* skipped' "$log")
if [ "$skipped" -gt 0 ]; then
    echo "skipped tests:"
    grep -E '^➜ Test .* skipped' "$log" | sed 's/^➜ Test /  /'
fi
echo "pushproof: $passed passed, $failed failed, $skipped skipped"
