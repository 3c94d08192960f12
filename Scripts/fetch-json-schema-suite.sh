#!/usr/bin/env bash
# Fetches the official JSON-Schema-Test-Suite and the draft 2020-12 metaschemas from PyPI, for
# Tests/SpecValidatorTests/JSONSchemaSuiteTests.swift. Both are pinned and checked by sha256:
# - jsonschema's source distribution carries the suite under json/ (tests/draft2020-12/ and
#   remotes/, the documents its remote-reference cases point at on http://localhost:1234/);
# - jsonschema-specifications' wheel carries the metaschemas (https://json-schema.org/draft/2020-12/...).
# Only jsonschema is taken as source (`--no-binary jsonschema`): pip then needs its build
# backend to read its metadata (~30 s once), and `:all:` would build that backend from source too.
# Unpacks only those folders into $1 (default .build/test-data), once: a second run with the
# same versions does nothing.
set -euo pipefail

dest=${1:-.build/test-data}
suite_version=4.23.0
suite_sha256=d71497fef26351a33265337fa77ffeb82423f3ea21283cd9467bb03999266bc4
specs_version=2024.10.1
specs_sha256=a09a0680616357d9a0ecf05c12ad234479f549239d0f5b55f3deea67475da9bf
stamp="$dest/json-schema-suite.stamp"
want="jsonschema==$suite_version jsonschema-specifications==$specs_version"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi

python=$(command -v python3) || { echo "fetch-json-schema-suite: python3 not found (make deps installs it)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fetch() {  # name version sha256 file-name binary-flag
    "$python" -m pip download --quiet --no-deps "$5" --dest "$work" "$1==$2" >&2 || {
        echo "fetch-json-schema-suite: pip could not download $1 $2 from PyPI" >&2; exit 1; }
    local archive="$work/$4"
    [ -f "$archive" ] || { echo "fetch-json-schema-suite: pip left no $archive" >&2; exit 1; }
    echo "$3  $archive" | sha256sum --check --quiet - || {
        echo "fetch-json-schema-suite: $archive does not have the pinned sha256 $3" >&2; exit 1; }
    echo "$archive"
}

suite_archive=$(fetch jsonschema "$suite_version" "$suite_sha256" "jsonschema-$suite_version.tar.gz" --no-binary=jsonschema)
specs_archive=$(fetch jsonschema-specifications "$specs_version" "$specs_sha256" \
    "jsonschema_specifications-$specs_version-py3-none-any.whl" --only-binary=:all:)

rm -rf "$dest/json-schema-test-suite" "$dest/json-schema-metaschemas"
mkdir -p "$dest/json-schema-test-suite" "$dest/json-schema-metaschemas"
tar -xzf "$suite_archive" -C "$dest/json-schema-test-suite" --strip-components=2 \
    "jsonschema-$suite_version/json/tests/draft2020-12" "jsonschema-$suite_version/json/remotes" \
    "jsonschema-$suite_version/json/LICENSE"
"$python" -m zipfile -e "$specs_archive" "$work/specs"
cp -R "$work/specs/jsonschema_specifications/schemas/draft202012" "$dest/json-schema-metaschemas/"
echo "$want" > "$stamp"
echo "fetch-json-schema-suite: JSON-Schema-Test-Suite ($want) in $dest" >&2
