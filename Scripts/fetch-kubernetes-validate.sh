#!/usr/bin/env bash
# Fetches PyPI's kubernetes-validate (it bundles the Kubernetes OpenAPI schemas, 1.25 to 1.37, and
# validates with no network) for Tests/FleetTests/ManifestValidationTests.swift, which checks the
# manifests `pushproof k8s render` writes with --strict. Every package of its closure is pinned by
# version and sha256 in Scripts/kubernetes-validate-requirements.txt and installed with
# --require-hashes --no-deps --only-binary, so pip resolves nothing and builds nothing, into
# $1/kubernetes-validate (default .build/test-data); the test puts that folder on PYTHONPATH.
# Once fetched, a second run with the same requirements and Python does nothing (offline-safe).
# No python3, or a Python none of the pinned wheels fits: a note, exit 0, and the test says why.
set -euo pipefail

dest=${1:-.build/test-data}
requirements=$(dirname "$0")/kubernetes-validate-requirements.txt
python=$(command -v python3) || { echo "fetch-kubernetes-validate: python3 not found (make deps installs it)" >&2; exit 0; }
tag=$("$python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')-$(uname -m)
case "$tag" in
    cp311-x86_64|cp312-x86_64|cp313-x86_64) ;;
    *) echo "fetch-kubernetes-validate: no pinned PyYAML/rpds-py wheels for $tag; the manifest validation test will say so" >&2; exit 0 ;;
esac
stamp="$dest/kubernetes-validate.stamp"
want="$(sha256sum "$requirements" | cut -d' ' -f1) $tag"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi

rm -rf "$dest/kubernetes-validate"
mkdir -p "$dest"
"$python" -m pip install --quiet --disable-pip-version-check --no-compile --no-deps --only-binary=:all: --require-hashes \
    --target "$dest/kubernetes-validate" -r "$requirements" >&2 || {
    echo "fetch-kubernetes-validate: pip could not install the pinned kubernetes-validate closure from PyPI" >&2; exit 1; }
echo "$want" > "$stamp"
echo "fetch-kubernetes-validate: kubernetes-validate 1.37.0 ($tag) in $dest/kubernetes-validate" >&2
