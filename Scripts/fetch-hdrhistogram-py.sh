#!/usr/bin/env bash
# Fetches PyPI's hdrhistogram (HdrHistogram_py), a third-party reader of HdrHistogram interval
# logs, for Tests/MetricsTests/HistogramInteropTests.swift. Pinned to one version and checked
# by sha256: the wheel of the python3 on PATH (its C extension is built per Python version), of
# which cp311, cp312 and cp313 on x86_64 are pinned. The wheel is only unpacked into
# $1/hdrhistogram-py (default .build/test-data), not installed: the test puts it on PYTHONPATH,
# and its declared dependencies (pbr, setuptools) are not needed to decode and add histograms.
# Once fetched, a second run with the same version and Python does nothing (offline-safe).
# Another Python or machine: a note, exit 0, and the test says the reader is missing.
set -euo pipefail

dest=${1:-.build/test-data}
version=0.10.8
python=$(command -v python3) || { echo "fetch-hdrhistogram-py: python3 not found (make deps installs it)" >&2; exit 0; }
tag=$("$python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')-$(uname -m)
case "$tag" in
    cp311-x86_64) sha256=2f7d154b3ebd0aff7b8dde75718872c7d3c4144f9b9eeba5b4841c6f89c3989b ;;
    cp312-x86_64) sha256=f9d6433aa4844e937e49394e4a0dc4ffbb564a9847a6d10b4a77a5d41bc9eb6b ;;
    cp313-x86_64) sha256=687abd745bb23a7cc94b4936247742b520029e22dc41376305fe16a158723e57 ;;
    *) echo "fetch-hdrhistogram-py: no pinned hdrhistogram $version wheel for $tag; the interoperability test will say so" >&2; exit 0 ;;
esac
stamp="$dest/hdrhistogram-py.stamp"
want="hdrhistogram==$version $tag"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" "hdrhistogram==$version" >&2 || {
    echo "fetch-hdrhistogram-py: pip could not download hdrhistogram $version from PyPI" >&2; exit 1; }
wheel=$(ls "$work"/hdrhistogram-"$version"-*.whl)
echo "$sha256  $wheel" | sha256sum --check --quiet - || {
    echo "fetch-hdrhistogram-py: $wheel does not have the pinned sha256 $sha256" >&2; exit 1; }
rm -rf "$dest/hdrhistogram-py"
mkdir -p "$dest/hdrhistogram-py"
"$python" -m zipfile -e "$wheel" "$dest/hdrhistogram-py"
echo "$want" > "$stamp"
echo "fetch-hdrhistogram-py: hdrhistogram $version ($tag) in $dest/hdrhistogram-py" >&2
