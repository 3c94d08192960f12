#!/usr/bin/env bash
# Runs a command with libcurl from Debian bookworm-backports (8.x) in place of the system's
# 7.88, without installing anything: the package is downloaded and unpacked into a temporary
# folder, which LD_LIBRARY_PATH puts first. pushproof picks the libcurl version up at run time
# (e.g. whether h2c prior-knowledge connections can be reused), so the same release build is
# measured against both libraries.
#
#   Benchmarks/with-backports-libcurl.sh Benchmarks/sender-vs-h2load.sh 3 20000
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGUMENTS...]" >&2; exit 2; }
DIR="$(mktemp -d /tmp/pushproof-libcurl.XXXXXX)"
trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/lists/partial" "$DIR/debs" "$DIR/root"
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$DIR/sources.list"
APT=(-o Dir::Etc::sourcelist="$DIR/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$DIR/lists")
apt-get "${APT[@]}" update >/dev/null
(cd "$DIR/debs" && apt-get "${APT[@]}" download libcurl4 >/dev/null 2>&1)
dpkg -x "$DIR"/debs/libcurl4_*.deb "$DIR/root"
LIB="$DIR/root/usr/lib/x86_64-linux-gnu"
echo "libcurl: $(basename "$(readlink -f "$LIB/libcurl.so.4")") from $(basename "$DIR"/debs/libcurl4_*.deb)"
LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
